// SPDX-License-Identifier: GPL-2.0
/*
 * The shared code from kmod/common/, compiled into this module (nothing is
 * exported, so impair.ko and ecn_proxy.ko load independently): the flow
 * table and packet parser, the option walker/strip helpers, the seq/ack/SACK
 * mapping and the rule grammar.  The pure files are the same ones the unit
 * tests in kmod/tests/unit/ compile.
 */
#include "../common/tcpmb_flow.c"
#include "../common/tcpmb_opt.c"
#include "../common/tcpmb_seq.c"
#include "../common/impair_rule.c"
