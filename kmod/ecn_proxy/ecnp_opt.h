/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ECN proxy: the pure (skb-free) TCP option code of ecn_proxy.ko, on top of
 * tcpfwd's option helpers (../core/tcpfwd_opt.h): what the state machine
 * reads from a SYN's options, whether a segment is signed, and the option
 * block of an ACK that dupack
 * mode rewrites (struct ecnp_ack_edit).  Builds into the module and into
 * the unit test kmod/tests/unit/test_ecnp_opt.c.
 */
#ifndef _ECNP_OPT_H
#define _ECNP_OPT_H

#include "../core/tcpfwd_opt.h"
#include "ecnp_fsm.h"

int ecnp_syn_opts(const u8 *opts, unsigned int len, struct ecnp_pkt *ep);
bool ecnp_opts_rebuildable(const u8 *opts, unsigned int len);
bool ecnp_opts_signed(const u8 *opts, unsigned int len);
unsigned int ecnp_build_opts(u8 *out, const u8 *opts, unsigned int len,
			     u32 ack, const struct ecnp_ack_edit *e);
unsigned int ecnp_ack_rebuild(u8 *th, unsigned int hlen,
			      const struct ecnp_ack_edit *e, u32 *csum_diff);

#endif /* _ECNP_OPT_H */
