# SPDX-License-Identifier: GPL-2.0
"""Inside the QEMU guest: the runs of a plan (vm-testbed/matrix-guest.sh
starts `python3 -m ecnproxy.guest.matrix`).

  matrix     every pending run of RESULTS/plan.json, one record each
  fairness   a run of a fairness profile (two long flows, one proxied)
  impair     a run of an impairment experiment (kind "impair")
  mptcp      a run of one with driver "mptcp" (exp-mbtest-mptcp)
  testbed    what the three share: the topology, the agents, counters,
             probes, the log
  agent      one per network namespace, started by testbed.Agent

Standard library only (impair: with analysis/transit.py's numpy).
"""
