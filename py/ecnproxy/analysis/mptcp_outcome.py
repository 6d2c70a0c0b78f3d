# SPDX-License-Identifier: GPL-2.0
"""A Multipath TCP transfer's outcome (exp-mbtest-mptcp), one rule for the
guest that records it (guest/mptcp.py) and the analysis that re-judges
older records from their raw parts (analysis/mptcp.py).  Standard library
only.

  outcome(st, direction, cli, srv, mc, ms, ss_mptcp)
      "ok" (byte-exact, still MPTCP at both ends), "fallback" (byte-exact,
      but an end fell back to TCP), "reset" (the transfer failed with a
      reset) or "broken" (it failed otherwise, or the bytes differ).  An
      end fell back when its TCP_IS_MPTCP says 0, when a fallback counter
      moved (FALLBACK_COUNTERS), or when the client's last `ss -Mi` sample
      says "fallback" (ss_fallback(): Linux 6.1 has no TCP_IS_MPTCP and
      counts no fallback of the receive path).
"""

# MPTcpExt counters that mean a fallback to TCP (the names are the MIB's,
# net/mptcp/mib.c, less the "MPTcpExt" prefix)
FALLBACK_COUNTERS = ("MPCapableFallbackACK", "MPCapableFallbackSYNACK", "MPFallbackTokenInit",
                     "InfiniteMapTx", "InfiniteMapRx", "DSSFallback", "SimultConnectFallback",
                     "FallbackFailed")
RESET_COUNTERS = ("MPRstTx", "MPRstRx", "MPFastcloseTx", "MPFastcloseRx")


def ss_fallback(text):
    """True when `ss -Mi`'s text of the client's MPTCP socket carries the
    "fallback" flag (mptcp_diag: MPTCP_INFO_FLAG_FALLBACK)."""
    return isinstance(text, str) and "fallback" in text.split()


SS_FALLBACK = "client:ss -Mi fallback"


def outcome(st, direction, cli, srv, mc, ms, ss_mptcp=None):
    """-> (outcome, byte_exact, fallback, reset, the kernel's fallback and
    reset counters that moved at either end, and SS_FALLBACK when the
    client's last `ss -Mi` sample, ss_mptcp, says it fell back)."""
    n = st["transfer_bytes"]
    snd, rcv = (cli, srv) if direction == "upload" else (srv, cli)
    exact = (not snd.get("error") and not rcv.get("error") and rcv.get("received") == n
             and rcv.get("received_sha256") == snd.get("sent_sha256"))
    why_fb = sorted({"%s:%s" % (end, k) for end, m in (("client", mc), ("server", ms))
                     for k in m if k in FALLBACK_COUNTERS and m[k] > 0})
    why_rst = sorted({"%s:%s" % (end, k) for end, m in (("client", mc), ("server", ms))
                      for k in m if k in RESET_COUNTERS and m[k] > 0})
    if st["mptcp"] and ss_fallback(ss_mptcp):
        why_fb.append(SS_FALLBACK)
    ends = [(e.get("mptcp") or {}).get("is_mptcp") for e in (cli, srv)]
    fallback = bool(st["mptcp"]) and (0 in ends or bool(why_fb))
    errs = " ".join(str(e.get("error") or "") for e in (cli, srv))
    reset = "ConnectionReset" in errs or "reset" in errs.lower()
    if exact:
        res = "fallback" if fallback else "ok"
    else:
        res = "reset" if reset else "broken"
    return res, exact, fallback, reset, why_fb + why_rst
