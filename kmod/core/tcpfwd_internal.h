/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside tcpfwd.ko only: the flow table's life cycle and its collector,
 * which tcpfwd_net.c runs for each user.
 */
#ifndef _TCPFWD_INTERNAL_H
#define _TCPFWD_INTERNAL_H

#include "tcpfwd.h"

/*
 * The collector looks at 1/TCPFWD_GC_SLICES of the flows every
 * TCPFWD_GC_INTERVAL, so at every flow about once a second, but at no more
 * than TCPFWD_GC_MAX_RUN flows a run (100,000 a second: a pass over 10^6
 * flows takes 10 s, and an expired flow may stay that long); it leaves RCU
 * to reschedule every TCPFWD_GC_BATCH flows, and does not run while the
 * table is empty (tcpfwd_flow_add() wakes it).
 */
#define TCPFWD_GC_SLICES	8
#define TCPFWD_GC_INTERVAL	(HZ / TCPFWD_GC_SLICES)
#define TCPFWD_GC_BATCH		256
#define TCPFWD_GC_MAX_RUN	12500

int tcpfwd_flowtab_init(struct tcpfwd_flowtab *t, size_t flow_size,
			struct kmem_cache *cache);
void tcpfwd_flowtab_destroy(struct tcpfwd_flowtab *t);
unsigned int tcpfwd_flowtab_gc(struct tcpfwd_net *tn, unsigned int budget);

#endif /* _TCPFWD_INTERNAL_H */
