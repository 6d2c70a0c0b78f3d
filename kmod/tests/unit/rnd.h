/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xorshift32 for the unit tests: reproducible pseudo-random inputs.  Define
 * RND_SEED before including.
 */
#ifndef _TEST_RND_H
#define _TEST_RND_H

static u32 rnd_state = RND_SEED;

static u32 rnd(void)
{
	u32 x = rnd_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	rnd_state = x;
	return x;
}

#endif /* _TEST_RND_H */
