// SPDX-License-Identifier: GPL-2.0
/*
 * ECN proxy: the tombstone table (see ecnp_tomb.h).  Every function runs
 * under the plumbing's lock, except that the packet path may read
 * ecnp_tombs_none()'s fields and a slot's hash without it, as a hint.
 *
 * The count of slots in use (live) goes down when a tombstone is taken,
 * forgotten or found expired, and the whole table counts as empty once
 * the latest expiry of any tombstone put has passed (last): the packet
 * path's "no tombstones, no lookup" shortcut holds again after expiry,
 * and the next put clears the stale slots.
 */
#include "ecnp_tomb.h"

void ecnp_tombs_init(struct ecnp_tombs *t, u32 n)
{
	t->n = n;
	t->live = 0;
	t->last = 0;
	memset(t->slot, 0, (size_t)n * sizeof(t->slot[0]));
}

/* No tombstone can be found: the lookup may be skipped. */
bool ecnp_tombs_none(const struct ecnp_tombs *t, u64 now)
{
	return !t->live || (s64)(now - t->last) >= 0;
}

/* The slot of @hash (NULL in a table without slots). */
struct ecnp_tomb *ecnp_tombs_slot(struct ecnp_tombs *t, u32 hash)
{
	return t->n ? &t->slot[hash % t->n] : NULL;
}

static bool ecnp_tomb_expired(const struct ecnp_tomb *s, u64 now)
{
	return (s64)(now - s->expires) >= 0;
}

static void ecnp_tomb_clear(struct ecnp_tombs *t, struct ecnp_tomb *s)
{
	s->hash = 0;
	t->live--;
}

/**
 * ecnp_tombs_put - remember a connection
 * @t: the table
 * @tomb: the tombstone (hash set, not 0)
 * @now: the time
 *
 * Return: true if it evicted another connection's live tombstone.
 */
bool ecnp_tombs_put(struct ecnp_tombs *t, const struct ecnp_tomb *tomb,
		    u64 now)
{
	struct ecnp_tomb *s = ecnp_tombs_slot(t, tomb->hash);
	bool evicted = false;

	if (!s)
		return false;
	if (t->live && ecnp_tombs_none(t, now)) {
		/* every one has expired: start over */
		ecnp_tombs_init(t, t->n);
	}
	if (s->hash) {
		evicted = !ecnp_tomb_expired(s, now) &&
			  (s->hash != tomb->hash ||
			   memcmp(s->key, tomb->key, sizeof(s->key)));
		t->live--;
	}
	*s = *tomb;
	t->live++;
	if (t->live == 1 || (s64)(tomb->expires - t->last) > 0)
		t->last = tomb->expires;
	return evicted;
}

static struct ecnp_tomb *ecnp_tombs_lookup(struct ecnp_tombs *t, u32 hash,
					   const u32 *key)
{
	struct ecnp_tomb *s = ecnp_tombs_slot(t, hash);

	if (!s || !s->hash || s->hash != hash ||
	    memcmp(s->key, key, sizeof(s->key)))
		return NULL;
	return s;
}

/**
 * ecnp_tombs_find - the tombstone of a key, left in place
 * @t: the table
 * @hash: the key's hash
 * @key: the key
 * @now: the time
 * @out: a copy of it, if found
 *
 * An expired one is cleared.  The caller takes it with
 * ecnp_tombs_forget() once the connection has its flow again.
 *
 * Return: true if found.
 */
bool ecnp_tombs_find(struct ecnp_tombs *t, u32 hash, const u32 *key, u64 now,
		     struct ecnp_tomb *out)
{
	struct ecnp_tomb *s = ecnp_tombs_lookup(t, hash, key);

	if (!s)
		return false;
	if (ecnp_tomb_expired(s, now)) {
		ecnp_tomb_clear(t, s);
		return false;
	}
	*out = *s;
	return true;
}

/* Forget the key's tombstone (taken, or a new connection). */
bool ecnp_tombs_forget(struct ecnp_tombs *t, u32 hash, const u32 *key)
{
	struct ecnp_tomb *s = ecnp_tombs_lookup(t, hash, key);

	if (!s)
		return false;
	ecnp_tomb_clear(t, s);
	return true;
}

/**
 * ecnp_tombs_move - put the live tombstones of one table into another
 * @to: the new table, empty
 * @from: the old one
 * @now: the time
 *
 * Return: how many were lost (two in one slot of @to: the later one wins).
 */
u32 ecnp_tombs_move(struct ecnp_tombs *to, const struct ecnp_tombs *from,
		    u64 now)
{
	u32 i, lost = 0;

	for (i = 0; i < from->n; i++) {
		const struct ecnp_tomb *s = &from->slot[i];

		if (!s->hash || ecnp_tomb_expired(s, now))
			continue;
		if (!to->n || ecnp_tombs_put(to, s, now))
			lost++;
	}
	return lost;
}
