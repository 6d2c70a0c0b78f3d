# SPDX-License-Identifier: GPL-2.0
"""Fidelity checks the host derives from a record's raw data, beside the
flags the guest wrote into it (`fidelity.flags`, guest/matrix.py).

`bottleneck_underdelivered`: the bottleneck's queue held packets in at
least UNDER_BACKLOG of the 50 ms samples taken while the transfer ran
(`probes.queue.samples`: [time, backlog bytes, packets]), yet the link
carried less than UNDER_UTIL of its rate (`fidelity.bottleneck_
utilisation`, cross traffic included).  A shaper with a backlog sends at
its rate; one that does not was held back by the guest (its timers or
CPU under TCG), so the link was not the limit.  RTOs and slow start lower
the utilisation too, but they empty the queue, which is why the backlog
is part of the test.  The bounds: over the 3050 matrix records in
results/ on 2026-12-03 with 20 samples or more, those with a backlog in
at least 90 % of the samples had a utilisation of 0.83 or more at the
first percentile (median 0.92), but one, at 0.56
(docs/findings.md, "The final code's 0 ms upload cells").

Read by the matrix report (analysis/report.py) and scripts/ecnproxy redo;
the fairness and experiment reports read the guest's flags only.
"""
UNDER_BACKLOG = 0.90
UNDER_UTIL = 0.75
MIN_SAMPLES = 20


def backlog_share(rec):
    """The share of the record's queue samples with a backlog, or None
    with fewer than MIN_SAMPLES of them."""
    q = ((rec.get("probes") or {}).get("queue") or {}).get("samples")
    if not isinstance(q, list):
        return None
    vals = [s[1] for s in q if isinstance(s, (list, tuple)) and len(s) > 1
            and isinstance(s[1], (int, float))]
    if len(vals) < MIN_SAMPLES:
        return None
    return sum(1 for v in vals if v > 0) / len(vals)


def underdelivered(rec):
    """True when the bottleneck had a backlog almost throughout and still
    carried less than UNDER_UTIL of its rate."""
    util = (rec.get("fidelity") or {}).get("bottleneck_utilisation")
    share = backlog_share(rec)
    return util is not None and share is not None and share >= UNDER_BACKLOG \
        and util < UNDER_UTIL


def flags(rec):
    """The record's own fidelity flags and the derived ones, in order."""
    out = list((rec.get("fidelity") or {}).get("flags") or [])
    if underdelivered(rec) and "bottleneck_underdelivered" not in out:
        out.append("bottleneck_underdelivered")
    return out
