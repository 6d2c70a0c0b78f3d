// SPDX-License-Identifier: GPL-2.0
/*
 * The per-segment work of the ECN proxy's state machine on a proxied
 * flow in its steady state (kmod/ecn_proxy/ecnp_fsm.c, compiled as
 * shipped): what ecnp_step() in ecnp_main.c asks of it for each segment,
 * ecnp_fsm_wants_opts() and ecnp_fsm_step().  Not modelled: the
 * plumbing around it (parse, lookup, the flow's lock, counters, header
 * edits).
 *
 * A benchmark, not a test: kmod/tests/bench/fsm-bench.sh runs it under
 * valgrind --tool=callgrind (instruction counts, deterministic) and prints
 * instructions per segment.
 *
 *   bench_fsm KIND N
 *   N rounds of two of N's data segments (1448 bytes, in order, with
 *   timestamps) and one pure ACK of E's; KIND n or e: whose steps the
 *   script counts (step_n(), step_e())
 *
 * The flow: A (N) without ECN and with SACK and timestamps, B (E) with
 * ECN, feedback dupack: bench-hook-kernel's "proxy-dupack" connection,
 * the client sending.  Built with -I to the tree under test (its
 * kmod/core, kmod/ecn_proxy, kmod/tests/unit), so that the script can
 * also build it against an older revision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecnp_fsm.c"

#define MSS	1448u

static struct ecnp_fsm flow;
static volatile u32 sink;

static struct ecnp_pkt seg(u8 dir, u16 flags, u32 seq, u32 ack, u32 len)
{
	struct ecnp_pkt p = {
		.seq = seq, .ack = ack, .len = len, .flags = flags,
		.dir = dir, .seg_len = (u16)len, .win = 0xffff,
		.opt = ECNP_OPT_TS, .tsval = seq, .tsecr = ack,
	};

	return p;
}

/* as ecnp_step(): options only when the machine reads them */
static u32 step(struct ecnp_pkt *p)
{
	if (!ecnp_fsm_wants_opts(&flow, p->flags, ECNP_FB_DUPACK))
		p->opt = 0;
	return ecnp_fsm_step(&flow, p, ECNP_FB_DUPACK, false);
}

/* noipa: no clone with another name, for --toggle-collect */
static __attribute__((noipa)) u32 step_n(struct ecnp_pkt *p)
{
	return step(p);
}

static __attribute__((noipa)) u32 step_e(struct ecnp_pkt *p)
{
	return step(p);
}

int main(int argc, char **argv)
{
	u32 a = 1000000, b = 5000000, r;
	struct ecnp_pkt p;
	unsigned int i, n;

	if (argc != 3 || (strcmp(argv[1], "n") && strcmp(argv[1], "e")) ||
	    !(n = (unsigned int)atoi(argv[2]))) {
		fprintf(stderr, "usage: bench_fsm n|e N\n");
		return 2;
	}
	ecnp_fsm_init(&flow);
	p = seg(ECNP_DIR_A, ECNP_TCP_SYN, a, 0, 0);
	p.opt |= ECNP_OPT_SACK_PERM;
	step(&p);
	p = seg(ECNP_DIR_B, ECNP_TCP_SYN | ECNP_TCP_ACK | ECNP_TCP_ECE, b,
		a + 1, 0);
	p.opt |= ECNP_OPT_SACK_PERM;
	step(&p);
	a++;
	b++;
	p = seg(ECNP_DIR_A, ECNP_TCP_ACK, a, b, 0);
	step(&p);
	if (!ecnp_fsm_in_phase2(&flow)) {
		fprintf(stderr, "bench_fsm: not proxied (%s)\n",
			ecnp_state_name(flow.state));
		return 1;
	}
	for (i = 0; i < 3 * n; i++) {
		if (i % 3 == 2) {
			p = seg(ECNP_DIR_B, ECNP_TCP_ACK, b, a, 0);
			r = step_e(&p);
		} else {
			p = seg(ECNP_DIR_A, ECNP_TCP_ACK, a, b, MSS);
			a += MSS;
			r = step_n(&p);
			if (!(r & ECNP_ACT_SET_ECT0)) {
				fprintf(stderr, "bench_fsm: N's data not ECT\n");
				return 1;
			}
		}
		sink = r;
	}
	if (flow.state != ECNP_S_DEFAULT) {
		fprintf(stderr, "bench_fsm: left DEFAULT (%s)\n",
			ecnp_state_name(flow.state));
		return 1;
	}
	return 0;
}
