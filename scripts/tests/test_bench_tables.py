# SPDX-License-Identifier: GPL-2.0
"""The benchmark tables: tables/bench_hook.py on runs timed in the kernel
(bench-hook-kernel) and tables/bench_lookup.py with and without the hot
lookups, on synthetic results directories whose answers are known."""
import json

from ecnproxy.tables import bench_hook, bench_lookup


def write_hook_runs(tmp_path, cost, reps=10, ok=True):
    """cost: {config: ns per packet}; each rep spreads it by +-0.2 %."""
    meta = {"method": "kernel", "reps": reps, "packets": 20000, "seed": 1,
            "kernel": "6.1.0-test", "cpus": 2, "payload": {"full": 1448, "small": 64},
            "configs": list(cost)}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with open(tmp_path / "runs.jsonl", "w") as f:
        for rep in range(1, reps + 1):
            for cfg, ns in cost.items():
                for size in ("full", "small"):
                    x = ns * (1 + 0.002 * ((rep % 5) - 2))
                    f.write(json.dumps({
                        "config": cfg, "size": size, "rep": rep, "fwd_ns": x + 1000,
                        "base_ns": 1000, "ns": x, "pps": 1e9 / x, "c2s": 100, "s2c": 50,
                        "out_c2s": 100, "out_s2c": 50, "rx_drop": 150,
                        "ok": ok or cfg != "proxy-off"}) + "\n")


def test_hook_kernel_goals(tmp_path, capsys):
    """ns runs (the guest's own clock): costs, no verdicts; icount runs:
    issue 42's goals in instructions added, and the strip rule against the
    in-tree targets by the ratio of their added costs."""
    cost = {"nomod": 10000, "proxy-off": 10003, "proxy-neither": 10500,
            "proxy-drop": 10650, "impair-strip-ts": 11000, "xt-tcpoptstrip-ts": 10800,
            "nft-reset-ts": 11200, "conntrack": 12000, "conntrack-proxy": 12100}
    write_hook_runs(tmp_path, cost)
    bench_hook.main(str(tmp_path))
    out = capsys.readouterr().out
    assert "No module: 10000 ns per packet forwarded." in out
    assert "+500 |" in out  # proxy-neither's ns over no module
    assert "Runs whose filters did not see every packet forwarded: 0 of" in out
    assert "this run's costs are ns: not judged" in out
    assert "goal <= +" not in out and "ratio 0.9" not in out.split("### Goals")[1]
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["clock"] = "icount"
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    bench_hook.main(str(tmp_path))
    out = capsys.readouterr().out
    goals = out.split("### Goals")[1].splitlines()

    def line(start):
        return [s for s in goals if s.startswith(start)][0]
    assert "No module: 10000 instructions per packet forwarded." in out
    assert line("- loaded, off in this netns, full: +3, goal <= +5").endswith(": met")
    assert line("- a flow that needs nothing, no conntrack, full: +500").endswith("NOT met")
    assert line("- a flow that needs nothing, conntrack present, full: +100").endswith(": met")
    assert line("- proxied flow, drop, full: +650, goal <= +700").endswith(": met")
    # +1000 against xt's +800: 1.25x, not met; against nft's +1200: 0.83x, met
    assert line("- impair `strip timestamp` vs xt TCPOPTSTRIP").endswith(
        "+1000 vs +800, 1.25x its added cost, goal <= 1.0x: NOT met")
    assert line("- impair `strip timestamp` vs nft `reset").endswith(
        "+1000 vs +1200, 0.83x its added cost, goal <= 1.0x: met")


def test_hook_kernel_runs_not_ok_are_left_out_and_named(tmp_path, capsys):
    write_hook_runs(tmp_path, {"nomod": 10000, "proxy-off": 10030}, ok=False)
    bench_hook.main(str(tmp_path))
    out = capsys.readouterr().out
    assert "did not see every packet forwarded: 20 of 40 (proxy-off full, proxy-off small)" in out
    assert "| ecn_proxy loaded, enabled=0 | 0 | - |" in out


def write_lookup_raw(tmp_path, hot):
    lines = []
    for rnd in range(1, 8):
        for size, hit, mem, hotns in ((1000, 350, 70, 340), (100000, 1000, 300, 350),
                                      (1000000, 1600, 700, 352 + rnd)):
            line = ("size=%d round=%d hit_ns=%d miss_ns=%d base_ns=100 mem_ns=%d buckets=%d"
                    % (size, rnd, hit + rnd, hit // 2, mem, 2 * size))
            if hot:
                line += " hot_ns=%d" % hotns
            lines.append(line)
    lines.append("done")
    (tmp_path / "raw.txt").write_text("\n".join(lines) + "\n")


def test_lookup_table_hot(tmp_path, capsys):
    write_lookup_raw(tmp_path, hot=True)
    bench_lookup.main(str(tmp_path))
    out = capsys.readouterr().out
    goals = out.split("### Goal")[1]
    assert "every flow active (hit): 5.92 x [5.86, 5.98]" in goals
    assert [s for s in goals.splitlines() if "(hit)" in s][0].endswith("NOT met")
    assert [s for s in goals.splitlines() if "(hot)" in s][0].endswith(": met")
    assert "| 1000000 | 356 | 256 |" in out


def test_lookup_table_without_hot(tmp_path, capsys):
    write_lookup_raw(tmp_path, hot=False)
    bench_lookup.main(str(tmp_path))
    out = capsys.readouterr().out
    assert "Hot lookups" not in out
    assert "(hot)" not in out and "(hit)" in out
