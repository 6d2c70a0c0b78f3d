# SPDX-License-Identifier: GPL-2.0
"""The conntrack status bit ecn_proxy borrows, in every supported kernel.

kmod/ecn_proxy/ecnp_ct.c sets IPS_NAT_CLASH on the confirmed conntrack
entry of a TCP connection it proxies, so that nftables' flowtable
(nft_flow_offload_eval()) leaves the connection on the slow path.  The bit
is the kernel-internal reuse of the UAPI bit IPS_UNTRACKED (12).  This is
safe only as long as the kernel reads the bit (by either name) nowhere
else where a confirmed TCP entry could be affected: while resolving a NAT
clash (nf_conntrack_core.c, before an entry is confirmed), for UDP (and
GRE since 6.12) and in nft_flow_offload.c.  This test reads the sources of
every supported kernel (Debian's linux-source-6.1 and -6.12 tarballs) and
fails when a kernel uses either name in another file, or when
nft_flow_offload.c stops reading it (the proxy's offload guard would then
do nothing).  The places, with their lines, are in docs/home-router.md.
Status reads that take the whole word (ctnetlink's CTA_STATUS, nft's
"ct status", xt_conntrack's --ctstatus) show the bit to userspace as
IPS_UNTRACKED; they are listed there too, and change no kernel behaviour.

The proxy also owns a bit of its own, ECNP_CT_NOTHING_BIT, the top bit of
the status word (kmod/ecn_proxy/ecnp_ct.c: "this connection needs
nothing", its conntrack-assisted bypass).  That is safe while the kernel's
IPS_* bits end below it (__IPS_MAX_BIT, also asserted at build time) and
the kernel writes the whole word only where it makes an entry or a
template (so no write clears the proxy's bit on a live entry, and a
reused entry starts without it); the second test checks both.
"""
import functools
import os
import re
import tarfile

import pytest

TARBALLS = {
    "6.1": "/usr/src/linux-source-6.1.tar.xz",
    "6.12": "/usr/src/linux-source-6.12.tar.xz",
}

NAME = re.compile(r"\bIPS_(NAT_CLASH|UNTRACKED)(_BIT)?\b")

# file -> why a use there cannot touch a confirmed TCP entry
ALLOWED = {
    "include/uapi/linux/netfilter/nf_conntrack_common.h":
        "the definitions, and IPS_UNCHANGEABLE_MASK (ctnetlink cannot set it)",
    "net/netfilter/nf_conntrack_core.c":
        "set on the loser of a NAT clash, before it is confirmed",
    "net/netfilter/nf_conntrack_proto_udp.c": "UDP and UDP-Lite only",
    "net/netfilter/nf_conntrack_proto_gre.c": "GRE only (6.12)",
    "net/netfilter/nft_flow_offload.c": "the reason the proxy sets it",
}


def code_uses(text):
    """(line number, line) of each use outside comments."""
    out = []
    in_comment = False
    for n, line in enumerate(text.splitlines(), 1):
        code = ""
        i = 0
        while i < len(line):
            if in_comment:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_comment = False
                    i = end + 2
                continue
            start = line.find("/*", i)
            slash = line.find("//", i)
            if slash >= 0 and (start < 0 or slash < start):
                code += line[i:slash]
                break
            if start < 0:
                code += line[i:]
                break
            code += line[i:start]
            in_comment = True
            i = start + 2
        if NAME.search(code):
            out.append((n, line.strip()))
    return out


# whole-word writes of a conntrack entry's status (not one bit's)
STATUS_WRITE = re.compile(r"(->|\.)status\s*(=[^=]|&=|\^=)")
CT_DIRS = ("net/netfilter/", "net/ipv4/netfilter/", "net/ipv6/netfilter/",
           "net/sched/act_ct.c", "net/openvswitch/conntrack.c",
           "include/net/netfilter/")
# the only ones: a new entry, a new template (6.1 and 6.12)
STATUS_WRITES_OK = {
    ("net/netfilter/nf_conntrack_core.c", "ct->status = 0;"),
    ("net/netfilter/nf_conntrack_core.c", "tmpl->status = IPS_TEMPLATE;"),
}
MAX_BIT = re.compile(r"__IPS_MAX_BIT\s*=\s*(\d+)")
# ecn_proxy's own bit on a 32-bit kernel (63 on a 64-bit one)
NOTHING_BIT_32 = 31


def kernel_uses(tarball):
    """{path: [(line, text)]} for every .c/.h under net/ and include/."""
    return kernel_scan(tarball)[0]


@functools.lru_cache(maxsize=None)
def kernel_scan(tarball):
    """(kernel_uses(), [(path, status write)], __IPS_MAX_BIT)."""
    uses = {}
    writes = []
    max_bit = None
    with tarfile.open(tarball, "r|xz") as tar:
        for m in tar:
            parts = m.name.split("/", 1)
            if len(parts) != 2 or not m.isfile():
                continue
            path = parts[1]
            if not path.startswith(("net/", "include/")) or \
                    not path.endswith((".c", ".h")):
                continue
            text = tar.extractfile(m).read().decode("utf-8", "replace")
            if path.startswith(CT_DIRS):
                for line in text.splitlines():
                    if STATUS_WRITE.search(line):
                        writes.append((path, line.strip()))
            if path == "include/uapi/linux/netfilter/nf_conntrack_common.h":
                found_max = MAX_BIT.search(text)
                max_bit = int(found_max.group(1)) if found_max else None
            if "IPS_" not in text:
                continue
            found = code_uses(text)
            if found:
                uses[path] = found
    return uses, writes, max_bit


@pytest.mark.parametrize("kver", sorted(TARBALLS))
def test_borrowed_ct_bit_read_nowhere_else(kver):
    tarball = TARBALLS[kver]
    if not os.path.exists(tarball):
        pytest.skip(f"{tarball} not installed (make deps)")
    uses = kernel_uses(tarball)
    other = {p: u for p, u in uses.items() if p not in ALLOWED}
    assert not other, (
        f"{kver} uses IPS_NAT_CLASH/IPS_UNTRACKED in files not audited for "
        f"ecn_proxy's use of the bit (docs/home-router.md): {other}")
    offload = uses.get("net/netfilter/nft_flow_offload.c", [])
    assert any("IPS_NAT_CLASH" in t for _, t in offload), (
        f"{kver}: nft_flow_offload.c no longer skips IPS_NAT_CLASH entries: "
        "the proxy's offload guard does nothing")
    core = uses.get("net/netfilter/nf_conntrack_core.c", [])
    assert all("loser_ct" in t for _, t in core), (
        f"{kver}: nf_conntrack_core.c uses the bit beyond the NAT clash "
        f"loser: {core}")


@pytest.mark.parametrize("kver", sorted(TARBALLS))
def test_own_ct_bit_untouched(kver):
    tarball = TARBALLS[kver]
    if not os.path.exists(tarball):
        pytest.skip(f"{tarball} not installed (make deps)")
    _, writes, max_bit = kernel_scan(tarball)
    assert max_bit is not None and max_bit <= NOTHING_BIT_32, (
        f"{kver}: __IPS_MAX_BIT {max_bit}: the kernel's status bits reach "
        "ecn_proxy's ECNP_CT_NOTHING_BIT (kmod/ecn_proxy/ecnp_ct.h)")
    other = sorted(set(writes) - STATUS_WRITES_OK)
    assert not other, (
        f"{kver} writes a conntrack status word whole where ecn_proxy's "
        f"audit (kmod/ecn_proxy/ecnp_ct.c) did not look: {other}")
