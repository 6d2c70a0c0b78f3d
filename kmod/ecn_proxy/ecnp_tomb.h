/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ECN proxy: tombstones, the proxied connections whose flow expired while
 * they were idle (FSM.md, "Pickup").  A direct-mapped table of
 * tombstones, pure and skb-free: the plumbing (ecnp_main.c) hashes the
 * key, allocates the table, passes the time and holds its lock; the unit
 * tests (kmod/tests/unit/test_ecnp_tomb.c) build the same file.
 */
#ifndef _ECNP_TOMB_H
#define _ECNP_TOMB_H

#include "ecnp_fsm.h"

/* A flow key (struct tcpfwd_flow_key) as words: the plumbing checks it */
#define ECNP_TOMB_KEY_WORDS	10

struct ecnp_tomb {
	u32 key[ECNP_TOMB_KEY_WORDS];
	u32 hash;		/* the plumbing's hash of key, never 0; 0: an
				 * empty slot
				 */
	bool e_is_lo;		/* E is the key's lo endpoint */
	struct ecnp_conn_id id;	/* which connection (ecnp_fsm_conn_id()) */
	u64 expires;		/* in the plumbing's 64-bit time */
};

struct ecnp_tombs {
	u32 n;			/* slots; 0: no tombstones kept */
	u32 live;		/* slots in use */
	u64 last;		/* no slot in use expires later than this */
	struct ecnp_tomb slot[];
};

/* What a segment of a 4-tuple without a flow does with its tombstone. */
enum ecnp_tomb_use {
	ECNP_TOMB_IGNORE = 0,	/* a RST, a SYN-ACK: creates no flow */
	ECNP_TOMB_FORGET,	/* a SYN: a new connection on the 4-tuple */
	ECNP_TOMB_LOOKUP,	/* may belong to the remembered connection */
};

/**
 * ecnp_tomb_use - what a segment without a flow does with a tombstone
 * @flags: its ECNP_TCP_* flags
 *
 * A SYN starts a new connection on the 4-tuple: the remembered one is
 * gone, and its tombstone with it, whether or not the SYN gets a flow
 * (the table may be full), so that the new connection is never picked
 * up with the old one's roles.  A segment without SYN or RST may be the
 * remembered connection's (ecnp_conn_id_match() decides).  Inline: on
 * every segment without a flow.
 *
 * Return: an enum ecnp_tomb_use.
 */
static inline enum ecnp_tomb_use ecnp_tomb_use(u16 flags)
{
	u16 fl = flags & (ECNP_TCP_SYN | ECNP_TCP_ACK | ECNP_TCP_RST);

	if (fl == ECNP_TCP_SYN)
		return ECNP_TOMB_FORGET;
	if (fl & (ECNP_TCP_SYN | ECNP_TCP_RST))
		return ECNP_TOMB_IGNORE;
	return ECNP_TOMB_LOOKUP;
}

void ecnp_tombs_init(struct ecnp_tombs *t, u32 n);
bool ecnp_tombs_none(const struct ecnp_tombs *t, u64 now);
struct ecnp_tomb *ecnp_tombs_slot(struct ecnp_tombs *t, u32 hash);
bool ecnp_tombs_put(struct ecnp_tombs *t, const struct ecnp_tomb *tomb,
		    u64 now);
bool ecnp_tombs_find(struct ecnp_tombs *t, u32 hash, const u32 *key, u64 now,
		     struct ecnp_tomb *out);
bool ecnp_tombs_forget(struct ecnp_tombs *t, u32 hash, const u32 *key);
u32 ecnp_tombs_move(struct ecnp_tombs *to, const struct ecnp_tombs *from,
		    u64 now);

#endif /* _ECNP_TOMB_H */
