# SPDX-License-Identifier: GPL-2.0
"""The debug kernel's config against what the code and the tests use.

1. vm-testbed/kconfig/debug.config and our modules' RCU list walks.
2. vm-testbed/kconfig/testbed.config and the home router's ruleset (below).

vm-testbed/kconfig/debug.config leaves CONFIG_PROVE_RCU_LIST off: it checks
list_for_each_entry_rcu() and its relatives for a reader or a lockdep
condition, 6.1's nf_tables set code fails it under the commit mutex, and
our modules have no such walk (their RCU use is rhashtable and
rcu_dereference_*(), which PROVE_RCU checks).  If one of our modules gains
an RCU list walk, the option must come back (with the nf_tables reports
handled), or the walk goes unchecked: this test fails until then."""
import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEBUG_CONFIG = os.path.join(ROOT, "vm-testbed", "kconfig", "debug.config")

# the only walks that carry PROVE_RCU_LIST's check in 6.1
# (include/linux/rculist.h: __list_check_rcu, __list_check_srcu); the
# _continue, _from, _bl, _nulls and _lockless ones have none
RCU_LIST_WALK = re.compile(r"\bh?list_for_each_entry_s?rcu\s*\(")


def config_value(path, name):
    """'y', 'n' (is not set) or None (not mentioned) for CONFIG_name."""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line == f"# CONFIG_{name} is not set":
                return "n"
            if line.startswith(f"CONFIG_{name}="):
                return line.split("=", 1)[1]
    return None


def module_sources():
    """kmod/'s kernel sources (not its userspace unit tests)."""
    for d, dirs, files in os.walk(os.path.join(ROOT, "kmod")):
        dirs[:] = [x for x in dirs if x != "tests"]
        for f in files:
            if f.endswith((".c", ".h")) and not f.endswith(".mod.c"):
                yield os.path.join(d, f)


def rcu_list_walks(paths):
    hits = []
    for p in paths:
        with open(p, errors="replace") as f:
            for n, line in enumerate(f, 1):
                # comments mention walks without doing one
                code = line.split("//", 1)[0]
                if code.lstrip().startswith(("*", "/*")):
                    continue
                if RCU_LIST_WALK.search(code):
                    hits.append(f"{os.path.relpath(p, ROOT)}:{n}: {line.strip()}")
    return hits


@pytest.mark.parametrize("line,walks", [
    ("\tlist_for_each_entry_rcu(e, &head, list) {", 1),
    ("hlist_for_each_entry_rcu(f, &bucket, node, lockdep_is_held(&l))", 1),
    ("list_for_each_entry_srcu (p, &h, l, srcu_read_lock_held(&s))", 1),
    ("hlist_for_each_entry_srcu(p, &h, l, srcu_read_lock_held(&s))", 1),
    # no lockdep check in these: PROVE_RCU_LIST does not look at them
    ("hlist_nulls_for_each_entry_rcu(f, n, head, hnode)", 0),
    ("hlist_for_each_entry_rcu_notrace(x, h, n)", 0),
    ("list_for_each_entry_continue_rcu(pos, head, member)", 0),
    ("\tlist_for_each_entry(e, &head, list) {", 0),
    (" * hlist_for_each_entry_rcu() is not used here", 0),
    ("f = rhashtable_lookup(&t->ht, key, params);", 0),
    ("old = rcu_dereference_protected(in->rules, 1);", 0),
])
def test_the_scan_sees_each_walk_and_nothing_else(tmp_path, line, walks):
    src = tmp_path / "walk.c"
    src.write_text(f"static void f(void)\n{{\n{line}\n}}\n")
    assert len(rcu_list_walks([str(src)])) == walks


def test_the_scan_reads_our_modules():
    names = {os.path.relpath(p, ROOT) for p in module_sources()}
    assert "kmod/core/tcpfwd_flow.c" in names
    assert "kmod/ecn_proxy/ecnp_main.c" in names
    assert "kmod/impair/impair_main.c" in names


def test_debug_kernel_checks_rcu_list_walks_if_we_have_any():
    assert config_value(DEBUG_CONFIG, "PROVE_RCU") == "y"
    if config_value(DEBUG_CONFIG, "PROVE_RCU_LIST") == "y":
        return
    walks = rcu_list_walks(module_sources())
    assert walks == [], (
        "our modules walk RCU lists, which only CONFIG_PROVE_RCU_LIST checks; "
        "debug.config leaves it off (6.1 nf_tables trips it, see its comment):\n"
        + "\n".join(walks))


# --- the home router's ruleset against the debug kernel's fragment ---------
# The debug kernel builds nf_tables in (vm-testbed/kconfig/testbed.config);
# a statement of tb_home_ruleset whose expression the fragment leaves out
# makes `nft -f` fail in the guest ("cannot load the home router's
# ruleset"), as the named counters did before CONFIG_NFT_OBJREF
# (results/debugtest-20261129, run-20261129-s2b).  What each statement
# needs, from 6.1's net/netfilter/Makefile and Kconfig (counter, rt,
# exthdr, meta, payload, sets and verdict maps are part of nf_tables.o).
TESTBED_CONFIG = os.path.join(ROOT, "vm-testbed", "kconfig", "testbed.config")
TOPO = os.path.join(ROOT, "vm-testbed", "lib", "topology.sh")
# a word of the ruleset -> the options its expression needs
NEEDS = {
    "inet": ["NF_TABLES", "NF_TABLES_INET", "NF_TABLES_IPV4", "NF_TABLES_IPV6"],
    "name": ["NFT_OBJREF"],                 # counter name X
    "ct": ["NFT_CT", "NF_CONNTRACK"],
    "limit": ["NFT_LIMIT"],
    "reject": ["NFT_REJECT", "NFT_REJECT_INET"],
    "masquerade": ["NFT_MASQ", "NF_NAT_MASQUERADE"],
    "nat": ["NFT_NAT", "NF_NAT"],           # type nat hook ...
    "flowtable": ["NF_FLOW_TABLE", "NF_FLOW_TABLE_INET"],
    "offload": ["NFT_FLOW_OFFLOAD"],        # flow offload @ft
}
# words whose expressions are part of nf_tables.o (or plain syntax); a word
# in neither set fails test_every_word_is_known, so a new statement cannot
# slip past the check
BUILTIN = set("""
    table flush chain type filter hook input forward output prerouting
    postrouting ingress priority policy devices mangle dstnat srcnat
    accept drop return jump vmap counter
    iif oif iifname oifname meta nfproto l4proto ipv4 ipv6 tcp udp icmp
    icmpv6 code flags fin syn rst ack option maxseg size set rt mtu
    state established related invalid with reset icmpx port unreachable
    rate second burst packets flow
    echo request reply nd neighbor solicit advert router destination
    packet too big time exceeded parameter problem
""".split())


def home_ruleset(offload):
    p = subprocess.run(["bash", "-c", f'. "{TOPO}"; TB_OFFLOAD_FLOWS={offload} tb_home_ruleset'],
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def ruleset_words(text):
    """The ruleset's keywords: no quoted strings, numbers or the names it
    declares (the table, chains, counters, the flowtable)."""
    text = re.sub(r'"[^"]*"', " ", text)
    declared = set(re.findall(r"\b(?:chain|flowtable|jump|name)\s+(\w+)", text))
    declared |= set(re.findall(r"\bcounter\s+(\w+)\s*\{", text))
    declared |= set(re.findall(r"\btable\s+\w+\s+(\w+)", text))
    declared |= set(re.findall(r"@(\w+)", text))
    words = set(re.findall(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", text))
    return {w for w in words if w not in declared and not w.isdigit()}


def needed_options(text):
    return {o for w in ruleset_words(text) for o in NEEDS.get(w, [])}


def missing_options(need, testbed_config):
    return sorted(o for o in need
                  if config_value(testbed_config, o) != "y"
                  and config_value(DEBUG_CONFIG, o) != "y")


@pytest.mark.parametrize("offload", [0, 1])
def test_the_debug_kernel_has_what_the_home_ruleset_uses(offload):
    need = needed_options(home_ruleset(offload))
    assert {"NFT_OBJREF", "NFT_CT", "NFT_NAT"} <= need
    assert ("NFT_FLOW_OFFLOAD" in need) == bool(offload)
    missing = missing_options(need, TESTBED_CONFIG)
    assert missing == [], f"testbed.config lacks what the home ruleset uses: {missing}"


def test_every_word_is_known():
    unknown = ruleset_words(home_ruleset(1)) - BUILTIN - set(NEEDS)
    assert unknown == set(), (
        f"words of tb_home_ruleset this test does not know: {sorted(unknown)}; "
        "add what their expressions need to NEEDS (or to BUILTIN if nf_tables.o has them)")


def test_the_word_check_sees_a_new_statement():
    text = home_ruleset(0) + "\tchain extra { ip saddr 198.18.0.1 log prefix \"x\" }\n"
    assert {"ip", "saddr", "log", "prefix"} <= ruleset_words(text) - BUILTIN - set(NEEDS)


def test_a_missing_option_is_named(tmp_path):
    cfg = tmp_path / "testbed.config"
    cfg.write_text(open(TESTBED_CONFIG).read().replace("CONFIG_NFT_OBJREF=y\n", ""))
    assert missing_options(needed_options(home_ruleset(0)), str(cfg)) == ["NFT_OBJREF"]
