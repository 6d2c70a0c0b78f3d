# SPDX-License-Identifier: GPL-2.0
"""On the host: the experiments' drivers and their results directories.

  matrix         scripts/matrix: a profile's plan, the guest sessions
                 (vm-testbed/vm-run), then the analysis
  experiments    scripts/experiments: scripts/matrix once per exp-* profile
  analyze        a results directory's report (summary.md ...), then the index
  check          is a matrix results directory complete and well formed
  results_index  scripts/results-index: results/README.md and about.json
"""
