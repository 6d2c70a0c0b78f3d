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
 * makes the flow pass untouched.  A handshake whose block is malformed
 * goes on with the options before the fault, which are what its receiver
 * reads too; only a pickup refuses such a segment (ecnp_opts_signed()),
 * having no handshake to go by.
 *
 * Return: 0, or a negative value if the block is malformed (the options
 * before the fault are read).
 */
int ecnp_syn_opts(const u8 *opts, unsigned int len, struct ecnp_pkt *ep)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	int ret;

	tcpfwd_opt_iter_init(&it, opts, len);
	while ((ret = tcpfwd_opt_next(&it, &o)) > 0) {
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
	return ret;
}

/**
 * ecnp_opts_signed - may the header of a segment with these options not
 *	be edited?
 * @opts: the option block
 * @len: its length
 *
 * A TCP-MD5 or TCP-AO option anywhere in the block (a signature covers
 * the header), or a block that cannot be walked to its end: the proxy
 * does not pick up such a segment's connection (ecnp_pickup_wanted()).
 *
 * Return: true if the header must stay as it is.
 */
bool ecnp_opts_signed(const u8 *opts, unsigned int len)
{
	struct ecnp_pkt ep = { 0 };

	return ecnp_syn_opts(opts, len, &ep) < 0 ||
	       (ep.opt & ECNP_OPT_SIGNED);
}

/* Only NOP, EOL, timestamps and SACK: such a header can be rebuilt. */
bool ecnp_opts_rebuildable(const u8 *opts, unsigned int len)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	int ret;

	tcpfwd_opt_iter_init(&it, opts, len);
	while ((ret = tcpfwd_opt_next(&it, &o)) > 0)
		if (o.kind != TCPFWD_OPT_NOP && o.kind != TCPFWD_OPT_TIMESTAMP &&
		    o.kind != TCPFWD_OPT_SACK)
			return false;
	return ret == 0;
}

/* One of E's SACK blocks goes into the rebuilt ACK (struct ecnp_ack_edit). */
static bool ecnp_keep_block(const struct tcpfwd_sack_block *b,
			    const struct ecnp_ack_edit *e)
{
	/* inverted or empty: never valid (the receiver ignores it) */
	if (!before(b->start, b->end))
		return false;
	if (e->lost && before(b->start, e->lost_end) &&
	    after(b->end, e->lost_start))
		return false;
	return !e->limit || !after(b->end, e->sack_limit);
}

/**
 * ecnp_build_opts - the option block of a rebuilt pure ACK
 * @out: TCPFWD_OPT_MAX_LEN bytes
 * @opts: E's option block (ecnp_opts_rebuildable())
 * @len: its length
 * @ack: E's ACK number (it tells E's D-SACK block)
 * @e: the edit
 *
 * Timestamps (TSecr per @e), then E's D-SACK block (RFC 2883: its first,
 * if below @ack or inside its second block) unless @e leaves it out, then
 * @e's block, then E's other blocks that @e keeps, as many as fit.
 *
 * Return: its length, a multiple of 4.
 */
unsigned int ecnp_build_opts(u8 *out, const u8 *opts, unsigned int len,
			     u32 ack, const struct ecnp_ack_edit *e)
{
	struct tcpfwd_sack_block blk[TCPFWD_SACK_MAX_BLOCKS + 1];
	struct tcpfwd_sack_block own[TCPFWD_SACK_MAX_BLOCKS];
	unsigned int pos = 0, n = 0, nown = 0, i;
	bool dsack = false;
	u32 tsval, tsecr;
	int ret;

	if (tcpfwd_opt_get_ts(opts, len, &tsval, &tsecr) == 1) {
		out[0] = TCPFWD_OPT_NOP;
		out[1] = TCPFWD_OPT_NOP;
		out[2] = TCPFWD_OPT_TIMESTAMP;
		out[3] = TCPFWD_OPTLEN_TIMESTAMP;
		tcpfwd_put_be32(out + 4, tsval);
		tcpfwd_put_be32(out + 8, e->set_tsecr ? e->tsecr : tsecr);
		pos = 12;
	}
	if (tcpfwd_opt_get_sack(opts, len, own, ARRAY_SIZE(own), &nown) != 1)
		nown = 0;
	nown = min_t(unsigned int, nown, ARRAY_SIZE(own));
	/* tcp_check_dsack(): which of E's blocks reports a duplicate */
	if (nown)
		dsack = before(own[0].start, ack) ||
			(nown > 1 && !before(own[0].start, own[1].start) &&
			 !after(own[0].end, own[1].end));
	if (dsack && !e->no_dsack && ecnp_keep_block(&own[0], e))
		blk[n++] = own[0];
	if (e->sack)
		blk[n++] = (struct tcpfwd_sack_block){ e->sack_start, e->sack_end };
	for (i = dsack; i < nown; i++)
		if (ecnp_keep_block(&own[i], e))
			blk[n++] = own[i];
	if (n) {
		ret = tcpfwd_sack_build(out + pos, TCPFWD_OPT_MAX_LEN - pos, blk,
					n);
		if (ret > 0)
			pos += ret;
	}
	return pos;
}

/**
 * ecnp_ack_rebuild - rebuild a pure ACK's TCP header per an edit
 * @th: the TCP header, @hlen bytes in a buffer of TCPFWD_TCPHDR_MAX
 * @hlen: its length (doff * 4); its options ecnp_opts_rebuildable()
 * @e: the edit: ACK number, window, option block (ecnp_build_opts())
 * @csum_diff: set to the difference the new header makes to the TCP
 *	checksum, the check field left as it is (for
 *	inet_proto_csum_replace_by_diff()); the pseudo-header's length
 *	changes too, from @hlen to the returned length (no payload)
 *
 * Incremental, as every other edit of the proxy: a checksum that was
 * wrong stays wrong (the receiver drops the ACK, as it would have), and
 * the pseudo-header's addresses are never needed (with an IPv6 routing
 * header the final destination, not the IPv6 header's).
 *
 * Return: the new header length.
 */
unsigned int ecnp_ack_rebuild(u8 *th, unsigned int hlen,
			      const struct ecnp_ack_edit *e, u32 *csum_diff)
{
	unsigned int olen = hlen - TCPFWD_TCPHDR_LEN, nlen;
	u32 old = tcpfwd_csum_bytes(th, 0, hlen);
	u8 nopts[TCPFWD_OPT_MAX_LEN];

	nlen = ecnp_build_opts(nopts, th + TCPFWD_TCPHDR_LEN, olen,
			       tcpfwd_get_be32(th + 8), e);
	tcpfwd_put_be32(th + 8, e->ack);
	th[12] = (u8)(((TCPFWD_TCPHDR_LEN + nlen) / 4) << 4) | (th[12] & 0x0f);
	tcpfwd_put_be16(th + 14, e->win);
	memcpy(th + TCPFWD_TCPHDR_LEN, nopts, nlen);
	*csum_diff = tcpfwd_csum_sub(tcpfwd_csum_bytes(th, 0,
						       TCPFWD_TCPHDR_LEN + nlen),
				     old);
	return TCPFWD_TCPHDR_LEN + nlen;
}
