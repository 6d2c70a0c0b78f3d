# SPDX-License-Identifier: GPL-2.0
"""Shards of a plan, and what a record says about where it was made
(issue 45; docs/testbed.md, "Shards, parallel guests, Slurm").

SHARD=i/N: shard i (1..N) of a plan runs every run whose index is i-1
modulo N.  The plan is drawn from the profile's seed alone, so every
shard, on any host, draws the same plan; their records go to runs/ID.json
as an unsharded matrix's do, and the shards merge by copying records
(host/merge.py).  JOBS=n splits a session's pending runs among n guests.

origin(): what the host tells each guest session to put into its records
(session.json's "origin", copied by guest/matrix.py into every record):
the plan's digest, the git commit and the digest of the uncommitted
changes, each module's sha256, srcversion and vermagic, the host and a
session id unique across hosts.  host/merge.py refuses records whose
plan, code or module sources differ.
"""
import datetime
import glob
import hashlib
import json
import os
import subprocess
import time

from ..paths import TOP

# the modules a session loads: name -> path under the checkout
MODULES = {"ecn_proxy": os.path.join("kmod", "ecn_proxy", "ecn_proxy.ko"),
           "impair": os.path.join("kmod", "impair", "impair.ko"),
           "tcpfwd": os.path.join("kmod", "core", "tcpfwd.ko")}
# what the code of a session is: git's tree under these, with the changes
CODE_DIRS = ("kmod", "vm-testbed", "scripts", "py")

# the kernel's USER_HZ, the unit of /proc/stat and /proc/PID/stat
CLK_TCK = os.sysconf("SC_CLK_TCK")


def parse(spec):
    """"i/N" -> (i, N); None or "" -> None; ValueError when malformed."""
    if not spec:
        return None
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError("SHARD must be i/N (1 <= i <= N), not %r" % spec) from None
    if not 1 <= i <= n:
        raise ValueError("SHARD must be i/N (1 <= i <= N), not %r" % spec)
    return (i, n)


def fmt(shard):
    return "%d/%d" % shard if shard else None


def select(runs, shard):
    """The runs of SHARD ((i, N) or None: all): index = i-1 modulo N.  The
    plan's order interleaves repetitions, blocks and cells, so every shard
    gets a share of each and runs it in the plan's order."""
    if not shard:
        return list(runs)
    i, n = shard
    return [r for r in runs if r["index"] % n == i - 1]


def split(todo, jobs):
    """JOBS guests' shares of the pending runs TODO (round robin in plan
    order, so each gets a share of every block): a list of non-empty lists."""
    jobs = max(1, min(jobs, len(todo)))
    return [todo[k::jobs] for k in range(jobs)]


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def plan_digest(plan):
    """sha256 of the plan (profile, seed, feedback, every run): two shards
    merge only if their plans are the same."""
    return hashlib.sha256(canonical(plan).encode()).hexdigest()


def modinfo(path):
    """sha256, srcversion and vermagic of a .ko (None when it is absent).
    The sha256 differs between two builds of the same sources in different
    directories (debug info names the paths); srcversion (a digest of the
    sources) and vermagic (the kernel it is built for) do not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    out = {"sha256": hashlib.sha256(data).hexdigest()}
    for key in ("srcversion", "vermagic"):
        i = data.find(b"\0" + key.encode() + b"=")
        if i >= 0:
            j = data.find(b"\0", i + 1)
            out[key] = data[i + len(key) + 2:j].decode("ascii", "replace")
    return out


def git(*args):
    try:
        return subprocess.run(["git", "-C", TOP] + list(args), capture_output=True,
                              text=True).stdout
    except OSError:
        return ""


def code_id():
    """The commit, the uncommitted files and a digest of their changes
    (kmod/, vm-testbed/, scripts/, py/): two hosts run the same code when
    commit and digest agree."""
    dirty = git("status", "--porcelain", "--", *CODE_DIRS).strip()
    diff = ""
    if dirty:
        diff = git("diff", "HEAD", "--", *CODE_DIRS)
        for line in dirty.splitlines():  # untracked files' contents too
            if line.startswith("??"):
                p = os.path.join(TOP, line[3:].strip())
                for f in sorted(glob.glob(os.path.join(p, "**"), recursive=True)) \
                        if os.path.isdir(p) else [p]:
                    if os.path.isfile(f):
                        with open(f, "rb") as fh:
                            diff += "\n%s %s" % (f[len(TOP):],
                                                 hashlib.sha256(fh.read()).hexdigest())
    return {"git_commit": git("rev-parse", "HEAD").strip(), "git_dirty": dirty,
            "git_dirty_sha256": hashlib.sha256(diff.encode()).hexdigest() if dirty else None}


def origin(plan, shard, jobs, guest, kmod=None):
    """The session's origin, for session.json (the guest copies it into
    each record).  KMOD: the modules' directory (default the checkout's)."""
    node = os.uname().nodename
    now = datetime.datetime.now().astimezone()
    return dict(code_id(),
                plan_sha256=plan_digest(plan),
                modules={m: modinfo(os.path.join(kmod or TOP, p)) for m, p in MODULES.items()},
                host=node, host_cpus=os.cpu_count(),
                session_id="%s-%s-%d-%d" % (node, now.strftime("%Y%m%dT%H%M%S"), os.getpid(),
                                            guest),
                shard=fmt(shard), jobs=jobs, guest=guest,
                slurm_job=os.environ.get("SLURM_JOB_ID"))


def proc_cpu_s(stat_text):
    """(command, CPU seconds) of a process from /proc/PID/stat's text: its
    own utime and stime and those of its children it has reaped (cutime,
    cstime), so that work done by processes that are gone still counts."""
    comm = stat_text[stat_text.index("(") + 1:stat_text.rindex(")")]
    f = stat_text[stat_text.rindex(")") + 2:].split()
    return comm, sum(int(x) for x in f[11:15]) / CLK_TCK


def host_sample():
    """([epoch, load average (1 min), QEMU processes], other CPU seconds)
    of this host now.  TCG guests have no steal time: other VMs and
    processes on the host slow the guest's timers and packet path without
    showing in its /proc/stat.  Other CPU seconds: the CPU time of every
    process but the QEMU guests, their reaped children's included; over a
    run, its growth divided by the run's length and the host's CPUs is the
    share of the host that other work took (provenance.HOST_BUSY).  Not
    /proc/stat's busy time less QEMU's: on this project's host (itself a
    VM) that total grows more slowly than QEMU's own time."""
    n, other = 0, 0.0
    for p in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(p) as f:
                comm, secs = proc_cpu_s(f.read())
        except (OSError, ValueError, IndexError):
            continue
        if comm.startswith("qemu-system"):
            n += 1
        else:
            other += secs
    return [round(time.time()), round(os.getloadavg()[0], 2), n], round(other, 2)
