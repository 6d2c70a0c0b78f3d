# SPDX-License-Identifier: GPL-2.0
"""Inside the QEMU guest: the Python helpers of the VM tests and benchmarks,
run as `python3 -m ecnproxy.vmtest.NAME` by vm-testbed/tests/*.sh,
vm-testbed/bench/*.sh and vm-testbed/lib/*.sh (testlib.sh puts py/ on
PYTHONPATH).  Standard library only.

  xfer           a byte-exact transfer, client and server
  phases         one connection in steps with silences between them
  fuzzgen        malformed and adversarial packets (fuzz.sh)
  syn_flood      SYNs from random spoofed sources (flood.sh)
  syn_fill       SYNs of distinct connections that fill the proxy's flow
                 table (bench/flows-guest.sh)
  pcap_ecn       the ECN bits of one connection in a capture
  pcap_delivery  the delivery of one connection's data toward the server
  impair_pcap    the impairment tests' capture analysis (options, checksums,
                 sequence offsets)
"""
