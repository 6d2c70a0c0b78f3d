# SPDX-License-Identifier: GPL-2.0
"""The documentation against the code.

- Every sysctl, module parameter, procfs file and counter of ecn_proxy, and
  every counter, module parameter, procfs file and rule keyword of impair,
  is taken from the C sources (the tables the modules themselves use) and
  must have an entry in its man page (a .TP tag), the keywords' values
  at least a mention; the README's sysctl table lists every sysctl.
- Every man page renders with groff -man -ww (and man -l) without a warning.
- Every relative link of README.md and docs/**/*.md leads to a file.
- Every TB_* setting the testbed reads is in docs/testbed.md.
- make help is grouped, short, and lists every public target.

An extraction that finds nothing, or less than the code's own count, fails:
a renamed table must not make these tests pass vacuously.
"""
import glob
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAN = os.path.join(TOP, "docs", "man")


def read(rel):
    with open(os.path.join(TOP, rel), encoding="utf-8") as f:
        return f.read()


def block(src, start, what):
    """The text of the C initialiser or body that starts at regex @start,
    up to its closing '};' or '}' at the start of a line."""
    m = re.search(start, src)
    assert m, f"{what}: '{start}' not found in the source"
    end = re.compile(r"^\}", re.M).search(src, m.end())
    assert end, f"{what}: no end of block"
    return src[m.end():end.start()]


def names_in(body, what, minimum=1):
    """The string literals assigned in a designated initialiser table."""
    names = re.findall(r'=\s*"([a-z0-9_]+)"', body)
    assert len(names) >= minimum, f"{what}: extracted {len(names)} names: {names}"
    return names


def enum_count(src, enum, last, what):
    body = block(src, r"enum %s \{" % enum, what)
    members = re.findall(r"^\s*([A-Z0-9_]+),", body, re.M)
    assert members and members[-1] == last, f"{what}: enum {enum} does not end with {last}"
    return len(members) - 1


# --- what the code has -------------------------------------------------------

def core_stat_lines():
    """The lines tcpfwd_stats_show() prints after the user's counters."""
    body = block(read("kmod/core/tcpfwd_net.c"), r"static int tcpfwd_stats_show\(", "tcpfwd stats")
    names = re.findall(r'seq_printf\(seq, "([a-z_]+) %', body)
    assert {"flows_active", "flow_struct_bytes", "flow_alloc_bytes"} <= set(names), names
    return names


def core_proc_files():
    src = read("kmod/core/tcpfwd_net.c")
    always = re.findall(r'proc_create_net_single\("([a-z_]+)"', src)
    with_flow_show = re.findall(r'ops->flow_show &&\s*!proc_create_data\("([a-z_]+)"', src)
    assert always == ["stats"] and with_flow_show == ["flows"], (always, with_flow_show)
    return always, with_flow_show


def module_params(rel):
    src = read(rel)
    return re.findall(r"^module_param(?:_cb)?\(([a-z_]+),", src, re.M)


def ecn_proxy():
    src = read("kmod/ecn_proxy/ecnp_main.c")
    table = block(src, r"static struct ctl_table ecnp_sysctl_table\[\] = \{", "sysctl table")
    sysctls = (re.findall(r'\.procname\s*=\s*"([a-z_]+)"', table)
               + re.findall(r"ECNP_SYSCTL_INT\(([a-z_]+),", table))
    assert len(sysctls) >= 7, f"sysctls: extracted {sysctls}"
    stats = names_in(block(src, r"ecnp_stat_names\[ECNP_STAT_NR\] = \{", "counters"), "counters", 30)
    n = enum_count(src, "ecnp_stat", "ECNP_STAT_NR", "counters")
    assert len(stats) == n, f"{len(stats)} counter names for {n} enum members"
    files = []
    always, with_flow_show = core_proc_files()
    ops = block(src, r"static const struct tcpfwd_ops ecnp_tcpfwd_ops = \{", "tcpfwd_ops")
    files += always + (with_flow_show if re.search(r"\.flow_show\s*=", ops) else [])
    files += re.findall(r'proc_create_net_single_write\("([a-z_]+)"', src)
    params = module_params("kmod/ecn_proxy/ecnp_main.c")
    assert params == ["enable_init_net"], params
    return {
        "sysctl": sysctls,
        "counter": stats + core_stat_lines(),
        "module parameter": params,
        "procfs file": files,
    }


def impair():
    src = read("kmod/impair/impair_main.c")
    stats = names_in(block(src, r"impair_stat_names\[IMPAIR_STAT_NR\] = \{", "counters"), "counters", 20)
    n = enum_count(src, "impair_stat", "IMPAIR_STAT_NR", "counters")
    assert len(stats) == n, f"{len(stats)} counter names for {n} enum members"
    extra = re.findall(r'seq_printf\(seq, "([a-z_]+) %',
                       block(src, r"static void impair_stats_show\(", "impair stats_show"))
    assert extra, "impair_stats_show prints nothing"
    always, with_flow_show = core_proc_files()
    ops = block(src, r"static const struct tcpfwd_ops impair_tcpfwd_ops = \{", "tcpfwd_ops")
    files = always + (with_flow_show if re.search(r"\.flow_show\s*=", ops) else [])
    files += re.findall(r'proc_create_data\("([a-z_]+)"', src)
    params = module_params("kmod/impair/impair_main.c")
    assert sorted(params) == ["coalesce_timeout_ms", "flow_timeout", "max_flows"], params

    rule = read("kmod/impair/impair_rule.c")
    keywords = re.findall(r'\{ "([a-z0-9-]+)",\s*IMPAIR_KW_',
                          block(rule, r"\} impair_keywords\[\] = \{", "keywords"))
    assert len(keywords) >= 20, f"keywords: extracted {keywords}"
    options = re.findall(r'TCPFWD_OPT_[A-Z0-9_]+,\s*"([a-z0-9]+)"',
                         block(rule, r"\} impair_opt_names\[\] = \{", "option names"))
    assert len(options) >= 10, f"option names: extracted {options}"
    modifiers = re.findall(r'\{ "([a-z-]+)",\s*"',
                           block(rule, r"\} impair_modifiers\[\] = \{", "modifiers"))
    assert len(modifiers) >= 4, f"modifiers: extracted {modifiers}"
    # the values keywords take, and the alias "ts": every word the parser
    # compares a token with, and the ECN codepoint names
    values = set(re.findall(r'impair_(?:tok_is|accept)\([^,]+, "([a-z0-9-]+)"\)', rule))
    m = re.search(r"impair_ecn_names\[\] = \{([^}]*)\}", rule)
    assert m, "impair_ecn_names not found"
    values |= set(re.findall(r'"([a-z0-9-]+)"', m.group(1)))
    assert {"initiator", "synack", "ipv6", "compact", "flush", "ts", "ce"} <= values, values
    return {
        "counter": stats + core_stat_lines() + extra,
        "module parameter": params,
        "procfs file": files,
        "rule keyword": keywords,
        "option name": options,
    }, modifiers + sorted(values)


# --- what the pages say ------------------------------------------------------

def plain(roff):
    """Roff text as words: escapes for hyphen, quotes and fonts undone."""
    roff = roff.replace("\\-", "-").replace("\\(aq", "'").replace("\\&", "")
    roff = re.sub(r"\\f[BIRP]|\\f\(..|\\e|\\\(..", " ", roff)
    return roff


WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def tags(page):
    """The words of every .TP tag (the line after .TP) of a man page."""
    lines = read(os.path.join("docs", "man", page)).split("\n")
    out = set()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == ".TP":
            tag = re.sub(r"^\.[A-Z]{1,2}\s", " ", lines[i + 1])
            out |= set(WORD.findall(plain(tag).replace('"', " ")))
    assert out, f"{page}: no .TP tags"
    return out


def words(page):
    text = plain(read(os.path.join("docs", "man", page)))
    return set(WORD.findall(text.replace('"', " ")))


def missing(expected, have):
    return [f"{kind} {n}" for kind, names in expected.items() for n in names if n not in have]


def test_ecn_proxy_page_documents_every_sysctl_counter_file_and_parameter():
    exp = ecn_proxy()
    gone = missing(exp, tags("ecn_proxy.7"))
    assert not gone, "ecn_proxy.7 has no entry (.TP) for: " + ", ".join(gone)


def test_readme_lists_every_sysctl():
    readme = read("README.md")
    gone = [s for s in ecn_proxy()["sysctl"] if f"| `{s}` |" not in readme]
    assert not gone, "README.md's sysctl table lacks: " + ", ".join(gone)


def test_impair_page_documents_every_keyword_counter_file_and_parameter():
    exp, values = impair()
    gone = missing(exp, tags("impair.7"))
    assert not gone, "impair.7 has no entry (.TP) for: " + ", ".join(gone)
    have = words("impair.7")
    gone = [v for v in values if v not in have]
    assert not gone, "impair.7 never mentions: " + ", ".join(gone)


def man_pages():
    pages = sorted(glob.glob(os.path.join(MAN, "*.[1-9]")))
    assert len(pages) >= 3, f"man pages found: {pages}"
    return pages


@pytest.mark.parametrize("page", [os.path.basename(p) for p in man_pages()])
def test_man_page_renders_without_warnings(page):
    path = os.path.join(MAN, page)
    assert shutil.which("groff"), "groff missing (Debian: groff-base, in scripts/deps.debian)"
    first = read(os.path.join("docs", "man", page)).split("\n", 1)[0]
    pre = ["-t"] if first.startswith("'\\\"") and "t" in first[3:] else []
    r = subprocess.run(["groff", "-man", *pre, "-Tutf8", "-ww", "-z", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0 and not r.stderr, f"groff on {page}:\n{r.stderr}"
    name, section = page.rsplit(".", 1)
    assert re.search(r"^\.TH %s %s " % (re.escape(name.upper()), section),
                     read(os.path.join("docs", "man", page)), re.M), f"{page}: .TH does not name it"
    if shutil.which("man"):
        r = subprocess.run(["man", "-l", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, MANWIDTH="80", MAN_DISABLE_SECCOMP="1",
                                    LC_ALL="C.UTF-8"))
        assert r.returncode == 0 and not r.stderr, f"man -l {page}:\n{r.stderr}"
        assert len(r.stdout) > 1000, f"man -l {page}: almost no output"


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def markdown_files():
    files = ["README.md"] + sorted(
        os.path.relpath(p, TOP) for p in glob.glob(os.path.join(TOP, "docs", "**", "*.md"), recursive=True))
    assert len(files) >= 8, files
    return files


def test_relative_links_resolve():
    bad, n = [], 0
    for md in markdown_files():
        text = read(md)
        text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)   # fenced code
        text = re.sub(r"`[^`\n]*`", "", text)                       # code spans
        for target in LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            n += 1
            path = target.split("#", 1)[0]
            if not os.path.exists(os.path.normpath(os.path.join(TOP, os.path.dirname(md), path))):
                bad.append(f"{md}: {target}")
    assert n >= 50, f"only {n} relative links found"
    assert not bad, "links to nothing:\n" + "\n".join(bad)


def tb_settings_read():
    found = set()
    for f in glob.glob(os.path.join(TOP, "vm-testbed", "**", "*.sh"), recursive=True):
        with open(f, encoding="utf-8") as fh:
            src = fh.read()
        found |= set(re.findall(r"^\s*tb_knob_[a-z]+ +\S+ +(TB_[A-Z0-9_]+)", src, re.M))
        found |= set(re.findall(r'^: "\$\{(TB_[A-Z0-9_]+):=', src, re.M))
        found |= set(re.findall(r"\$\{(TB_(?:SUITE|KMOD|KMEMLEAK)):-", src))
    assert len(found) >= 50, f"TB_ settings: extracted {sorted(found)}"
    return found


def test_testbed_page_lists_every_tb_setting():
    page = read("docs/testbed.md")
    gone = sorted(v for v in tb_settings_read() if f"`{v}`" not in page)
    assert not gone, "docs/testbed.md does not list: " + ", ".join(gone)


def test_make_help_is_grouped_short_and_complete():
    # not the flags or jobserver of a make that runs these tests (make unit)
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    r = subprocess.run(["make", "-s", "--no-print-directory", "help"], cwd=TOP, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    lines = r.stdout.rstrip("\n").split("\n")
    assert len(lines) <= 40, f"make help prints {len(lines)} lines"
    assert max(len(line) for line in lines) <= 80, "a line of make help is wider than 80"
    for group in ("router", "experiments", "benchmarks", "tests", "debug-kernel", "set-up"):
        assert f"{group}:" in lines, f"no group {group}"
    m = re.search(r"^\.PHONY:((?:.*\\\n)*.*)", read("Makefile"), re.M)
    phony = set(m.group(1).replace("\\\n", " ").split()) - {"all", "build-modules", "build-unit", "run-check"}
    assert len(phony) >= 20, phony
    listed = set(re.findall(r"^  make (\S+)", r.stdout, re.M))
    assert phony == listed, f"not in make help: {sorted(phony - listed)}; not phony: {sorted(listed - phony)}"
