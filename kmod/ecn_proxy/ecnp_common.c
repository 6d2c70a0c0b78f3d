// SPDX-License-Identifier: GPL-2.0
/*
 * The shared plumbing from kmod/common/, compiled into this module.  Each
 * module gets its own copy and exports nothing, so ecn_proxy.ko and
 * impair.ko load independently.
 */
#include "../common/tcpmb_flow.c"
#include "../common/tcpmb_opt.c"
#include "../common/tcpmb_seq.c"
