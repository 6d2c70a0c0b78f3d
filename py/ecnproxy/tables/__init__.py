# SPDX-License-Identifier: GPL-2.0
"""Markdown tables from the raw output of a benchmark or a VM test run.

  bench_hook     scripts/bench-hook and bench-hook-kernel: results.md
  bench_flows    scripts/bench-flows: results.md
  bench_lookup   scripts/bench-lookup: results.md
  bench_dupack   scripts/bench-dupack: results.md
  proxy_dupack   the proxy_dupack VM test's log: kmod/ecn_proxy/DUPACK.md's
                 "Measured" table
  variants       a VM test run's plain and @VARIANT checks side by side
                 (scripts/publish-vmtest-run's home.md)
"""
