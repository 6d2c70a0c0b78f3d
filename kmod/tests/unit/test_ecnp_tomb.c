// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the ECN proxy's tombstone table
 * (kmod/ecn_proxy/ecnp_tomb.c): what a segment without a flow does with
 * a tombstone, the count of live tombstones behind the packet path's
 * shortcut, evictions, and a tombstone that stays until the pickup's
 * flow is added.  Built and run as the other unit tests (Makefile).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../ecn_proxy/ecnp_tomb.c"

#define SLOTS	8
#define LIFE	1000u

static struct ecnp_tombs *tab(u32 n)
{
	struct ecnp_tombs *t = calloc(1, sizeof(*t) + n * sizeof(t->slot[0]));

	assert_non_null(t);
	ecnp_tombs_init(t, n);
	return t;
}

/* A connection's tombstone: @k names its key, @hash picks its slot. */
static struct ecnp_tomb tomb(u32 k, u32 hash, u64 now)
{
	struct ecnp_tomb x = {
		.hash = hash,
		.e_is_lo = true,
		.id = { .e_nxt = 100 * k, .n_nxt = 200 * k, .win = 66000 },
		.expires = now + LIFE,
	};

	x.key[0] = k;
	return x;
}

/* A SYN forgets the 4-tuple's tombstone; RST and SYN-ACK create nothing. */
static void test_tomb_use(void **state)
{
	(void)state;
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_SYN), ECNP_TOMB_FORGET);
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_SYN | ECNP_TCP_ECE |
				       ECNP_TCP_CWR), ECNP_TOMB_FORGET);
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_SYN | ECNP_TCP_ACK),
			 ECNP_TOMB_IGNORE);
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_RST | ECNP_TCP_ACK),
			 ECNP_TOMB_IGNORE);
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_SYN | ECNP_TCP_RST),
			 ECNP_TOMB_IGNORE);
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_ACK), ECNP_TOMB_LOOKUP);
	assert_int_equal(ecnp_tomb_use(ECNP_TCP_ACK | ECNP_TCP_FIN),
			 ECNP_TOMB_LOOKUP);
}

/*
 * The count behind the "no tombstones, skip the lookup" shortcut goes
 * down again: when one is taken, forgotten or found expired, and the
 * table counts as empty once all have expired.
 */
static void test_tombs_count(void **state)
{
	struct ecnp_tombs *t = tab(SLOTS);
	struct ecnp_tomb a = tomb(1, 1, 0), b = tomb(2, 2, 10), out;

	(void)state;
	assert_true(ecnp_tombs_none(t, 0));
	assert_false(ecnp_tombs_put(t, &a, 0));
	assert_false(ecnp_tombs_put(t, &b, 10));
	assert_int_equal(t->live, 2);
	assert_false(ecnp_tombs_none(t, 500));
	/* a expired, b not: the shortcut does not hold yet */
	assert_false(ecnp_tombs_none(t, LIFE + 5));
	assert_false(ecnp_tombs_find(t, 1, a.key, LIFE + 5, &out));
	assert_int_equal(t->live, 1);
	/* both expired, never looked up: the shortcut holds */
	assert_true(ecnp_tombs_none(t, LIFE + 10));
	/* the next put starts over */
	a = tomb(3, 3, 5000);
	assert_false(ecnp_tombs_put(t, &a, 5000));
	assert_int_equal(t->live, 1);
	assert_false(ecnp_tombs_none(t, 5001));
	assert_true(ecnp_tombs_forget(t, 3, a.key));
	assert_int_equal(t->live, 0);
	assert_true(ecnp_tombs_none(t, 5001));
	free(t);
}

/*
 * A tombstone found stays until it is forgotten: a pickup whose flow
 * could not be added (table full, no memory) finds it again with the
 * connection's next segment.
 */
static void test_tombs_find_keeps(void **state)
{
	struct ecnp_tombs *t = tab(SLOTS);
	struct ecnp_tomb a = tomb(7, 7, 0), out;
	u32 other[ECNP_TOMB_KEY_WORDS] = { 8 };

	(void)state;
	ecnp_tombs_put(t, &a, 0);
	assert_true(ecnp_tombs_find(t, 7, a.key, 1, &out));
	assert_int_equal(out.id.n_nxt, 1400);
	assert_true(out.e_is_lo);
	assert_true(ecnp_tombs_find(t, 7, a.key, 2, &out));
	/* another key in the same slot, or another hash: not it */
	assert_false(ecnp_tombs_find(t, 7, other, 2, &out));
	assert_false(ecnp_tombs_find(t, 7 + SLOTS, a.key, 2, &out));
	assert_false(ecnp_tombs_forget(t, 7, other));
	assert_int_equal(t->live, 1);
	/* the flow was added: forgotten */
	assert_true(ecnp_tombs_forget(t, 7, a.key));
	assert_false(ecnp_tombs_find(t, 7, a.key, 3, &out));
	free(t);
}

/* Another connection's live tombstone overwritten: an eviction. */
static void test_tombs_evict(void **state)
{
	struct ecnp_tombs *t = tab(SLOTS);
	struct ecnp_tomb a = tomb(1, 3, 0), b = tomb(2, 3 + SLOTS, 0);
	struct ecnp_tomb c = tomb(3, 3, 2 * LIFE), out;

	(void)state;
	assert_false(ecnp_tombs_put(t, &a, 0));
	/* the same connection again: no eviction */
	assert_false(ecnp_tombs_put(t, &a, 1));
	assert_int_equal(t->live, 1);
	assert_true(ecnp_tombs_put(t, &b, 2));
	assert_int_equal(t->live, 1);
	assert_false(ecnp_tombs_find(t, 3, a.key, 3, &out));
	assert_true(ecnp_tombs_find(t, 3 + SLOTS, b.key, 3, &out));
	/* an expired one overwritten: not an eviction */
	assert_false(ecnp_tombs_put(t, &c, 2 * LIFE));
	assert_int_equal(t->live, 1);
	free(t);
}

/* A new size: live tombstones move, collisions are counted. */
static void test_tombs_move(void **state)
{
	struct ecnp_tombs *t = tab(SLOTS), *small = tab(2), *none = tab(0);
	struct ecnp_tomb x, out;
	u32 i;

	(void)state;
	for (i = 1; i <= 4; i++) {
		x = tomb(i, i, 0);
		ecnp_tombs_put(t, &x, 0);
	}
	x = tomb(9, 5, 0);
	x.expires = 1;
	ecnp_tombs_put(t, &x, 0);
	/* 1..4 into two slots: two lost; the expired one is not moved */
	assert_int_equal(ecnp_tombs_move(small, t, 2), 2);
	assert_int_equal(small->live, 2);
	x = tomb(4, 4, 0);
	assert_true(ecnp_tombs_find(small, 4, x.key, 3, &out));
	/* no slots: every live one is lost, nothing is found */
	assert_int_equal(ecnp_tombs_move(none, t, 2), 4);
	assert_null(ecnp_tombs_slot(none, 4));
	assert_false(ecnp_tombs_put(none, &x, 3));
	assert_false(ecnp_tombs_find(none, 4, x.key, 3, &out));
	assert_true(ecnp_tombs_none(none, 3));
	free(t);
	free(small);
	free(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tomb_use),
		cmocka_unit_test(test_tombs_count),
		cmocka_unit_test(test_tombs_find_keeps),
		cmocka_unit_test(test_tombs_evict),
		cmocka_unit_test(test_tombs_move),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
