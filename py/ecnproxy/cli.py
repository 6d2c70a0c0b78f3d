# SPDX-License-Identifier: GPL-2.0
"""The one command-line entry of the package.

  python3 -m ecnproxy COMMAND [ARGS...]     (py/ on PYTHONPATH)
  scripts/ecnproxy COMMAND [ARGS...]        (the same, from anywhere)
  scripts/ecnproxy                          the commands

A command runs its module as `python3 -m MODULE ARGS...` would (runpy:
the module's own usage, exit status and output), so the guest's
scripts may call a module directly, and this file imports none of them.
"""
import runpy
import sys

# (group, command, module under ecnproxy., what it does)
COMMANDS = [
    ("host", "matrix", "host.matrix",
     "make matrix (and fairness, experiments): plan, guest sessions, analysis"),
    ("host", "experiments", "host.experiments",
     "make experiments: matrix once per scripts/profiles/exp-*.json"),
    ("host", "merge", "host.merge",
     "DEST SRC...: merge the results directories of shards (SHARD=i/N)"),
    ("host", "redo", "host.redo",
     "RESULTS_DIR [--flag F] [--id ID]: move runs aside so that a resume makes them again"),
    ("host", "analyze", "host.analyze",
     "RESULTS_DIR: the report of a results directory (summary.md, ...)"),
    ("host", "check", "host.check",
     "RESULTS_DIR: a matrix results directory is complete and well formed"),
    ("host", "keep-captures", "host.keep_captures",
     "RESULTS_DIR: compress pcaps/ (KEEP_PCAPS=1, never committed) into captures/"),
    ("host", "results-index", "host.results_index",
     "results/README.md from each directory's about.json (--check, --about)"),
    ("tables", "bench-hook-table", "tables.bench_hook",
     "OUTDIR: scripts/bench-hook and bench-hook-kernel's results.md"),
    ("tables", "bench-flows-table", "tables.bench_flows",
     "OUTDIR: scripts/bench-flows' results.md"),
    ("tables", "bench-lookup-table", "tables.bench_lookup",
     "OUTDIR: scripts/bench-lookup's results.md"),
    ("tables", "bench-dupack-table", "tables.bench_dupack",
     "OUTDIR: scripts/bench-dupack's results.md"),
    ("tables", "dupack-table", "tables.proxy_dupack",
     "DIR: kmod/ecn_proxy/DUPACK.md's table from a proxy_dupack log"),
    ("tables", "cell-table", "tables.cells",
     "RESULTS [--check FILE]: the README's per-cell ratio tables from ratios.csv"),
    ("tables", "mechanism-table", "tables.mechanism",
     "RESULTS [--direction D] [--cross C]: per cell, medians of what the congestion control did"),
    ("tables", "kernel-table", "tables.kernels",
     "A B [--direction D]: one matrix on two guest kernels, cell by cell"),
    ("tables", "strata-table", "tables.strata",
     "RESULTS... [--direction D] [--cross C]: parallel flows' cells split by how many flows kept ECN"),
    ("tables", "session-start", "tables.session_start",
     "RESULTS... [--first K] [--above X]: are a guest session's first runs slower than its later ones"),
    ("tables", "fidelity-scan", "analysis.fidelity",
     "RESULTS...: the derived bottleneck_underdelivered flag over matrix records"),
    ("tables", "variant-table", "tables.variants",
     "RUN_DIR [VARIANT]: each VM test plain and as NAME@VARIANT"),
    ("analysis", "events", "analysis.events",
     "RESULTS: per congestion event, from the kept captures (diag-upload)"),
    ("analysis", "tsplot", "analysis.tsplot",
     "OUT.png RESULTS:RUN_ID[:N]...: time-sequence plots of events"),
    ("analysis", "fairness-metric", "analysis.fairness_metric",
     "RESULTS [DIRECTION]: reductions per CE-marked RTT by CE marks and window"),
    ("analysis", "stale-tsecr", "analysis.stale_tsecr",
     "PCAP [WINDOW_S]: ACKs with a TSecr older than a retransmission"),
    ("analysis", "sack-rtt-scan", "analysis.sack_rtt_scan",
     "PCAP PORT...: a sender's RTT samples and undone recoveries"),
    ("analysis", "event-cycle", "analysis.event_cycle",
     "RESULTS [--json OUT]: per congestion event, ECN against proxied (fairness pcaps)"),
    ("analysis", "ss-scan", "analysis.ss_scan",
     "FILE...: a fairness sender's `ss -ti` samples"),
    ("analysis", "mbtest-mptcp-table", "analysis.mptcp",
     "RESULTS... [--out FILE]: exp-mbtest-mptcp's Table 1 over directories (6.1, 6.12)"),
    ("analysis", "cwnd-dist", "analysis.cwnd_dist",
     "RESULTS... [--from S]: how often each fairness sender's cwnd was 1, 2, 3 ... segments"),
    ("analysis", "mptcp-joins", "analysis.mptcp_joins",
     "RESULTS [--json OUT]: coalesced segments against their DSS mappings (diag-mbtest-coalesce)"),
    ("analysis", "pcapflow", "analysis.pcapflow",
     "PCAP SERVER_PORT: per-flow ECN, loss and stalls of a capture (JSON)"),
    ("analysis", "stats", "analysis.stats",
     "--coverage [--write] [--reps N]: simulate the intervals' coverage"),
    ("guest", "matrix-guest", "guest.matrix",
     "RESULTS_DIR [--keep-pcaps]: a plan's runs (vm-testbed/matrix-guest.sh)"),
    ("guest", "matrix-agent", "guest.agent",
     "[--serve PORT]: one namespace's agent (JSON lines on stdin)"),
    ("vmtest", "xfer", "vmtest.xfer", "a byte-exact transfer, client or server"),
    ("vmtest", "phases", "vmtest.phases", "one connection in steps, with silences"),
    ("vmtest", "fuzzgen", "vmtest.fuzzgen", "malformed packets for fuzz.sh"),
    ("vmtest", "syn-flood", "vmtest.syn_flood", "SYNs from spoofed sources for flood.sh"),
    ("vmtest", "syn-fill", "vmtest.syn_fill", "SYNs that fill the flow table (bench-flows)"),
    ("vmtest", "pcap-ecn", "vmtest.pcap_ecn", "the ECN bits of one connection in a capture"),
    ("vmtest", "pcap-clamp", "vmtest.pcap_clamp",
     "E_PCAP N_PCAP PORT: dupack-rwnd's window clamp, E's segments paired across the proxy"),
    ("vmtest", "pcap-delivery", "vmtest.pcap_delivery",
     "the delivery of one connection's data toward the server"),
    ("vmtest", "impair-pcap", "vmtest.impair_pcap", "the impairment tests' capture analysis"),
]
MODULES = {c: "ecnproxy." + m for _g, c, m, _w in COMMANDS}
GROUPS = {"host": "on the host", "tables": "tables (Markdown on stdout)",
          "analysis": "analysis of kept captures and records",
          "guest": "inside the guest (matrix runs)",
          "vmtest": "inside the guest (VM tests: python3 -m ecnproxy.vmtest.NAME)"}


def usage(f):
    print("usage: scripts/ecnproxy COMMAND [ARGS...]  (python3 -m ecnproxy with py/ on "
          "PYTHONPATH)", file=f)
    for g, title in GROUPS.items():
        print("\n%s:" % title, file=f)
        for gg, c, _m, what in COMMANDS:
            if gg == g:
                print("  %-19s %s" % (c, what), file=f)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        usage(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    mod = MODULES.get(argv[0])
    if mod is None:
        print("ecnproxy: no command %r" % argv[0], file=sys.stderr)
        usage(sys.stderr)
        return 2
    sys.argv = [argv[0]] + argv[1:]  # argv[0] becomes the module's path
    runpy.run_module(mod, run_name="__main__", alter_sys=True)
    return 0
