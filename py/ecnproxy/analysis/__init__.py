# SPDX-License-Identifier: GPL-2.0
"""Analysis of the testbed's results: the throughput matrix, the fairness
profiles and the impairment experiments, and the captures behind them.

  pcapread     classic pcap files read into TCP segments
  pcapflow     per-flow ECN and loss analysis of a (truncated) pcap
  stalls       the cause of each stall (after TAPO), from one or two captures
  schema       the per-run JSON record: version, required fields, validation
  transit      a packet's time across a node, from two captures
  stats        medians, distribution-free and bootstrap confidence intervals
  report       the matrix's summary.csv, summary.md, box plots, time series
  fairness     the fairness profiles' report
  experiments  the impairment experiments' report (claims against papers)
  mptcp        Multipath TCP's experiment report (MBtest's Table 1)
  mptcpopt, mptcp_outcome
               MPTCP options per connection in a capture; a transfer's outcome
  events, tsplot, stale_tsecr, sack_rtt_scan, ss_scan, fairness_metric
               diagnoses from kept captures, `ss -ti` samples and records

This file imports nothing: pcapread, pcapflow, stalls, schema, mptcpopt
and mptcp_outcome need the standard library only, and the guest's
runners (ecnproxy.guest) load them inside every run.
"""
