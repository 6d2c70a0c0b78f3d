# SPDX-License-Identifier: GPL-2.0
"""Analysis of the throughput matrix (make matrix).

  pcapflow  per-flow ECN and loss analysis of a (truncated) pcap
  stalls    the cause of each stall (after TAPO), from one or two captures
  stats     medians, distribution-free and bootstrap confidence intervals
  schema    the per-run JSON record: version, required fields, validation
  report    summary.csv, summary.md, box plots, time series, README.md
"""
