# SPDX-License-Identifier: GPL-2.0
"""ecnproxy's Python: the testbed's experiments, their analysis and the
helpers of the VM tests, as one package (py/ecnproxy/).

  host/       on the host: the matrix driver (scripts/matrix), make
              experiments, the analysis of a results directory and its
              checks, the index of results/
  guest/      inside the QEMU guest: the runners of the matrix, fairness
              and impairment profiles, and the per-namespace agent
  vmtest/     inside the guest: the Python helpers of the VM tests and
              benchmarks (vm-testbed/tests/*.sh, vm-testbed/bench/*.sh)
  analysis/   the captures and run records analysed: reports, statistics
  tables/     Markdown tables of the benchmarks and VM test logs
  impair_plan.py  the impairment experiments' plans (host, guest, analysis)
  paths.py    where the checkout and its directories are
  cli.py      the one command-line entry: python3 -m ecnproxy COMMAND

Run with py/ on PYTHONPATH: `scripts/ecnproxy COMMAND` sets it (and
scripts/matrix, scripts/experiments and scripts/results-index are
`scripts/ecnproxy matrix` etc.); the guest's scripts set it themselves
(vm-testbed/matrix-guest.sh, vm-testbed/lib/testlib.sh).  Layers: cli
runs the others by name and imports none of them; host, guest, vmtest and
tables import analysis, impair_plan and paths, never one another; analysis
imports itself, impair_plan and paths only.  No import cycle, no sys.path
edit (scripts/tests/test_package.py checks all three).  What runs in the
guest needs the standard library only, but for analysis/stats.py's numpy
(guest/impair.py, through transit.py).
"""
