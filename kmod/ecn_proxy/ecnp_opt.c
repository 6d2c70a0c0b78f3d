// SPDX-License-Identifier: GPL-2.0
/* ECN proxy: pure TCP option code (see ecnp_opt.h). */
#include "ecnp_opt.h"

/**
 * ecnp_syn_opts - the options of a SYN or SYN-ACK the state machine reads
 * @opts: the option block
 * @len: its length
 * @ep: ECNP_OPT_SACK_PERM, ECNP_OPT_WSCALE (with wscale) and
 *	ECNP_OPT_SIGNED are set in ep->opt
 *
 * As its receiver reads them (tcp_parse_options()): up to a malformed
 * option, the last window scale of length 3 counting, so that the window
 * model never sees scaling off where the endpoints have it on.  A TCP-MD5
 * or TCP-AO option (of any length: a malformed one is no license to edit)
 * makes the flow pass untouched.
 */
void ecnp_syn_opts(const u8 *opts, unsigned int len, struct ecnp_pkt *ep)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;

	tcpfwd_opt_iter_init(&it, opts, len);
	while (tcpfwd_opt_next(&it, &o) > 0) {
		switch (o.kind) {
		case TCPFWD_OPT_SACK_PERM:
			ep->opt |= ECNP_OPT_SACK_PERM;
			break;
		case TCPFWD_OPT_WSCALE:
			if (o.len != TCPFWD_OPTLEN_WSCALE)
				break;
			ep->opt |= ECNP_OPT_WSCALE;
			ep->wscale = opts[o.off + 2];
			break;
		case TCPFWD_OPT_MD5SIG:
		case TCPFWD_OPT_AO:
			ep->opt |= ECNP_OPT_SIGNED;
			break;
		}
	}
}
