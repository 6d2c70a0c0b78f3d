# SPDX-License-Identifier: GPL-2.0
"""make matrix: the thesis throughput matrix in the VM testbed.

  scripts/matrix            (environment: PROFILE, FEEDBACK, SEED, KEEP_PCAPS,
                             MATRIX_OUT, MATRIX_VM_TIMEOUT, SHARD, JOBS,
                             SUBMIT, SHARDS, ACCEL, VM_RUN, VM_*, TB_*)

1. Reads the profile scripts/profiles/$PROFILE.json (default quick).
2. Picks the results directory: $MATRIX_OUT if set, else the newest
   results/$PROFILE-DATE[-N] of the same feedback mode if its plan is not
   complete (resume; an older unfinished one is never resumed), else a new
   results/$PROFILE-YYYYMMDD[-N].  A new directory gets plan.json: every run
   (configuration x direction x cross traffic x load x repetition), in an
   order drawn from the seed (repetitions in turn; in each, the four
   direction x cross blocks in random order, the 30 cells inside a block
   shuffled), and meta.json (command, git commit, host, profile, seed,
   feedback mode).  The plan is never rewritten: a resumed matrix runs the
   same list and skips every run whose record runs/ID.json exists.  Each
   session's git commit, dirty files and module hashes go to
   sessions/NN/session.json when it starts (so an interrupted session
   keeps them) and to meta.json when it ends.
3. Boots one guest (vm-testbed/vm-run -o RESULTS) that runs all pending runs
   (vm-testbed/matrix-guest.sh); a session that ends early but made progress
   is followed by another (at most 3 in all).
4. Runs the analysis (scripts/ecnproxy analyze, host/analyze.py) and
   prints the path of summary.md and its headline ratios.

SHARD=i/N runs shard i of N (host/shard.py: the runs whose index is i-1
modulo N; the plan is the same for every shard): it resumes the newest
directory whose shard is incomplete, and analyses only once the whole plan
has records (else it names the merge: scripts/ecnproxy merge).  JOBS=n
boots n guests side by side, each with its share of the pending runs, in
RESULTS/jobs/NN/ (folded into RESULTS as they end).  Each guest stamps its
records with the session's origin (plan, code, modules, host, session id)
and the host's load at each run's start and end.  VM_RUN replaces
vm-testbed/vm-run (scripts/tests/standin-vm-run boots nothing).
SUBMIT=slurm SHARDS=N submits the N shards as a Slurm job array and their
merge as a job after it (host/slurm.py), and returns.

FEEDBACK: the proxy's feedback mode (none, drop, dupack, dupack-rwnd,
dupack-fast); empty = the module's default.  KEEP_PCAPS=1 keeps the captures under RESULTS/pcaps/.
Exit: 0 when the matrix is complete and analysed, 1 otherwise.
"""
import datetime
import glob
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

from .. import impair_plan
from ..analysis.schema import CONFIGS, check_plan, split_feedback
from ..paths import PROFILES, TOP, python_env
from . import shard as shard_mod, slurm


def die(msg):
    print("matrix: " + msg, file=sys.stderr)
    sys.exit(1)


def load_profile(name):
    path = os.path.join(PROFILES, name + ".json")
    if not os.path.exists(path):
        have = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(PROFILES, "*.json")))
        die("no profile %r (scripts/profiles/: %s)" % (name, ", ".join(have)))
    with open(path) as f:
        prof = json.load(f)
    if prof.get("kind") == "impair":
        errs = impair_plan.check(prof)
        if errs:
            die("profile %s: %s" % (path, "; ".join(errs)))
        try:
            return impair_plan.scaled(prof, os.environ.get("EXP_SCALE") or "quick")
        except ValueError as e:
            die(str(e))
    if prof.get("kind", "matrix") == "fairness":
        for k in ("name", "reps", "directions", "pairs", "feedbacks", "duration_s", "fidelity"):
            if k not in prof:
                die("profile %s: missing %r" % (path, k))
        return prof
    for k in ("name", "reps", "configs", "directions", "cross", "loads", "sizes",
              "cross_rate", "fidelity"):
        if k not in prof:
            die("profile %s: missing %r" % (path, k))
    if not isinstance(prof.get("connect_barrier", False), bool):
        die("profile %s: connect_barrier must be true or false" % path)
    for c in prof["configs"]:
        if c not in CONFIGS:
            die("profile %s: unknown configuration %r (known: %s)" % (path, c, ", ".join(CONFIGS)))
    return prof


def make_fair_plan(prof, seed):
    """Fairness profile: every (direction, pair, feedback) once per
    repetition, shuffled within the repetition; a pair whose flows the proxy
    does not touch (ecn-vs-ecn) runs once per repetition, with the first
    feedback mode.  The feedback mode is per run."""
    rng = random.Random(seed)
    runs = []
    for rep in range(1, prof["reps"] + 1):
        cells = []
        for d in prof["directions"]:
            for pair in prof["pairs"]:
                fbs = prof["feedbacks"].get(d, []) if isinstance(prof["feedbacks"], dict) \
                    else prof["feedbacks"]
                if pair in prof.get("feedback_free_pairs", []):
                    # the proxy passes these flows: one run, with the
                    # first mode and the client's defaults (no "+prompt")
                    fbs = [split_feedback(f)[0] for f in fbs[:1]]
                for fb in fbs:
                    cells.append((d, pair, fb))
        rng.shuffle(cells)
        for d, pair, fb in cells:
            runs.append({"id": "%s_%s_%s_r%02d" % (d, pair, fb, rep), "index": len(runs),
                         "direction": d, "cross": "off", "pair": pair, "feedback": fb,
                         "rep": rep})
    return {"profile": prof, "seed": seed, "feedback": None, "runs": runs}


def make_plan(prof, seed, feedback):
    if prof.get("kind") == "impair":
        if feedback:
            die("FEEDBACK does not apply to an impairment experiment (the proxy is off)")
        return impair_plan.make_plan(prof, seed)
    if prof.get("kind", "matrix") == "fairness":
        if feedback:
            die("FEEDBACK does not apply to the fairness profile (its runs set the mode)")
        return make_fair_plan(prof, seed)
    rng = random.Random(seed)
    runs = []
    reps = prof["reps"]
    if not isinstance(reps, dict):  # one number, or one per cross setting
        reps = {c: reps for c in prof["cross"]}
    # "delays" (optional): netem delay in ms on the server's link, one
    # block per value; run ids then carry "_dMS"
    delays = prof.get("delays")
    for rep in range(1, max(reps.values()) + 1):
        blocks = [(d, c, ms) for d in prof["directions"] for c in prof["cross"]
                  for ms in (delays or [None]) if rep <= reps[c]]
        rng.shuffle(blocks)
        for d, c, ms in blocks:
            sz = prof["sizes"][d][c]
            cells = []
            loads = prof.get("loads_by_cross", {}).get(c, prof["loads"])
            for cfg in prof["configs"]:
                for n in loads:
                    cells.append((cfg, str(n), n, sz["flow_bytes"], 0))
                if sz.get("series"):
                    cnt, b = sz["series"]
                    cells.append((cfg, "series", 1, b, cnt))
            rng.shuffle(cells)
            for cfg, load, flows, b, series in cells:
                run = {
                    "id": "%s_%s%s_%s_%s_r%02d" % (d, "cross" if c == "on" else "nocross",
                                                  "" if ms is None else "_d%d" % ms,
                                                  load if load == "series" else "p" + load,
                                                  cfg, rep),
                    "index": len(runs), "direction": d, "cross": c, "load": load,
                    "flows": flows, "flow_bytes": b, "series": series,
                    "total_bytes": b * (series or flows), "config": cfg, "rep": rep}
                if ms is not None:
                    run["delay_ms"] = ms
                runs.append(run)
    return {"profile": prof, "seed": seed, "feedback": feedback or None, "runs": runs}


def sha256(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def dir_order(path):
    """Sort key of results/NAME-YYYYMMDD[-N]: by date, then N (a name, not
    the mtime, which a fresh checkout sets to the checkout's time)."""
    m = re.search(r"-(\d{8})(?:-(\d+))?$", path)
    return (m.group(1), int(m.group(2) or 1)) if m else ("", 0)


def pick_dir(prof, feedback, base=None, shard=None):
    """MATRIX_OUT, else the newest results/NAME-DATE* planned with the same
    feedback mode (so that FEEDBACK=drop does not resume a dupack run) if
    it is incomplete (for SHARD: if the shard's runs are), else a new one.
    Only the newest is resumed: an older unfinished directory was left
    behind by a newer run (of newer code).  A directory whose about.json
    says it was aborted or superseded is never resumed (nor one older)."""
    name = prof["name"]
    if os.environ.get("MATRIX_OUT"):
        return os.path.abspath(os.environ["MATRIX_OUT"])
    base = base or os.path.join(TOP, "results")
    for d in sorted(glob.glob(os.path.join(base, name + "-2*")), key=dir_order,
                    reverse=True):
        pf = os.path.join(d, "plan.json")
        if not os.path.exists(pf):
            continue
        with open(pf) as f:
            plan = json.load(f)
        if (plan.get("feedback") or "") != (feedback or ""):
            continue
        if closed(d):
            break
        if pending(d, plan, shard):
            return d
        break
    day = datetime.date.today().strftime("%Y%m%d")
    d = os.path.join(base, "%s-%s" % (name, day))
    i = 2
    while os.path.exists(d):
        d = os.path.join(base, "%s-%s-%d" % (name, day, i))
        i += 1
    return d


def closed(d):
    """D's about.json gives it up: status aborted or superseded."""
    try:
        with open(os.path.join(d, "about.json")) as f:
            return json.load(f).get("status") in ("aborted", "superseded")
    except (OSError, ValueError):
        return False


def pending(d, plan, shard=None):
    """The runs of the plan (of SHARD, if given) without a record in D."""
    return [r for r in shard_mod.select(plan["runs"], shard)
            if not os.path.exists(os.path.join(d, "runs", r["id"] + ".json"))]


# what vm-run leaves in its output directory, moved to sessions/NN/
VM_FILES = ("console.log", "dmesg.txt", "exit-code", "accel", "guest.txt", "kmemleak.txt",
            "endcheck.log", "endcheck-failed", "boot-failures") + tuple(
                "console-boot-%d.log" % i for i in range(1, 10))  # vm-run's failed boots


def vm_runner():
    """The guest runner: vm-testbed/vm-run, or VM_RUN (a stand-in that
    boots nothing: scripts/tests/standin-vm-run)."""
    return os.environ.get("VM_RUN") or os.path.join(TOP, "vm-testbed", "vm-run")


def run_session(argv, env, d, logpath, prefix=""):
    """vm-run, with its own lines shown as they come and the guest's progress
    from D/guest.log (vm-run passes the guest's stdout on in blocks); the
    host's load sampled every 5 s and written to D/hostload.json, which
    the guest copies into each record at its start and end."""
    glog = os.path.join(d, "guest.log")
    pos = os.path.getsize(glog) if os.path.exists(glog) else 0
    stop = threading.Event()

    def tail():
        nonlocal pos
        buf = ""
        while True:
            done = stop.is_set()
            try:
                with open(glog) as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos = f.tell()
            except OSError:
                chunk = ""
            buf += chunk
            *lines, buf = buf.split("\n")
            for line in lines:
                print("  %s%s" % (prefix, line), flush=True)
            if done:
                return
            stop.wait(2)

    def host_load():
        hl = os.path.join(d, "hostload.json")
        while not stop.is_set():
            s, other = shard_mod.host_sample()
            load.append(s)
            try:
                with open(hl + ".tmp", "w") as f:
                    json.dump({"host": os.uname().nodename, "cpus": os.cpu_count(),
                               "sample": s, "other_cpu_s": other}, f)
                os.replace(hl + ".tmp", hl)
            except OSError:
                pass
            stop.wait(5)

    load = []
    th = threading.Thread(target=tail, daemon=True)
    th.start()
    tl = threading.Thread(target=host_load, daemon=True)
    tl.start()
    with open(logpath, "w") as lf:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        for line in p.stdout:
            lf.write(line)
            lf.flush()
            if line.startswith("vm-run"):
                print(prefix + line, end="", flush=True)
        rc = p.wait()
    stop.set()
    th.join()
    tl.join()
    return rc, load


def move_tree(src, dst):
    """Move SRC's files into DST, keeping what DST has (a record is the
    same file either way: written once, atomically, by the guest)."""
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
        for name in os.listdir(src):
            move_tree(os.path.join(src, name), os.path.join(dst, name))
        shutil.rmtree(src, ignore_errors=True)
    elif not os.path.exists(dst):
        os.replace(src, dst)
    else:
        os.unlink(src)


def absorb(d, only=None):
    """Fold the guests' directories D/jobs/NN/ (JOBS > 1; ONLY: that one)
    into D: records to runs/, vm-run's files and guest.log to sessions/NN/
    (the guest's log also appended to D/guest.log), anything else (kept
    captures) into D."""
    for jd in [only] if only else sorted(glob.glob(os.path.join(d, "jobs", "*"))):
        sdir = os.path.join(d, "sessions", os.path.basename(jd))
        os.makedirs(sdir, exist_ok=True)
        for name in sorted(os.listdir(jd)):
            src = os.path.join(jd, name)
            if name in VM_FILES:
                os.replace(src, os.path.join(sdir, name))
            elif name == "guest.log":
                with open(src) as f, open(os.path.join(d, "guest.log"), "a") as g:
                    g.write("# guest of session %s (JOBS)\n%s" % (os.path.basename(jd), f.read()))
                os.replace(src, os.path.join(sdir, name))
            elif name in ("plan.json", "session.json", "hostload.json"):
                os.unlink(src)
            else:
                move_tree(src, os.path.join(d, name))
        shutil.rmtree(jd, ignore_errors=True)
    try:
        os.rmdir(os.path.join(d, "jobs"))
    except OSError:
        pass


def guest_session(k, todo, out, d, plan, ctx):
    """Session K: one guest in OUT (D itself, or D/jobs/NN with JOBS > 1)
    running the runs TODO; returns its entry for meta.json."""
    accel, shard, jobs, env, timeout = ctx["accel"], ctx["shard"], ctx["jobs"], ctx["env"], \
        ctx["timeout"]
    if out != d:
        os.makedirs(os.path.join(out, "runs"), exist_ok=True)
        shutil.copyfile(os.path.join(d, "plan.json"), os.path.join(out, "plan.json"))
    org = shard_mod.origin(plan, shard, jobs, k)
    # the guest reads the accelerator, the runs to make and what to stamp
    # on each record from session.json
    with open(os.path.join(out, "session.json"), "w") as f:
        json.dump({"accel": accel, "todo": [r["id"] for r in todo], "origin": org}, f)
    ko = os.path.join(TOP, "kmod", "ecn_proxy", "ecn_proxy.ko")
    sess = {"n": k, "id": org["session_id"],
            "start": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "accel": accel, "pending_before": len(todo),  # the runs given to this guest
            "git_commit": org["git_commit"], "git_dirty": org["git_dirty"],
            "git_dirty_sha256": org["git_dirty_sha256"], "plan_sha256": org["plan_sha256"],
            "ecn_proxy_ko_sha256": sha256(ko),
            "impair_ko_sha256": sha256(os.path.join(TOP, "kmod", "impair", "impair.ko")),
            "tcpfwd_ko_sha256": sha256(os.path.join(TOP, "kmod", "core", "tcpfwd.ko")) if os.path.exists(os.path.join(TOP, "kmod", "core", "tcpfwd.ko")) else None,
            "modules": org["modules"],
            "host": org["host"], "host_cpus": os.cpu_count(),
            "shard": org["shard"], "jobs": jobs, "slurm_job": org["slurm_job"]}
    argv = [vm_runner(), "-o", out, "-t", str(timeout), "-a", accel,
            "--", os.path.join(TOP, "vm-testbed", "matrix-guest.sh"), out]
    if os.environ.get("KEEP_PCAPS") == "1":
        argv.append("--keep-pcaps")
    prefix = "[%d] " % k if jobs > 1 else ""
    print("matrix: %ssession %d: %d runs: %s" % (
        prefix, k, len(todo), " ".join(map(shlex.quote, argv))), flush=True)
    t0 = time.time()
    sdir = os.path.join(d, "sessions", "%02d" % k)
    os.makedirs(sdir, exist_ok=True)
    # what this session runs on, kept even if it is interrupted (meta.json
    # is written only when a session ends)
    with open(os.path.join(sdir, "session.json"), "w") as f:
        json.dump(sess, f, indent=1)
    rc, load = run_session(argv, env, out, os.path.join(sdir, "vm-run.log"), prefix)
    if out == d:
        for fn in VM_FILES:
            try:
                os.replace(os.path.join(d, fn), os.path.join(sdir, fn))
            except FileNotFoundError:
                pass
        try:
            os.unlink(os.path.join(d, "hostload.json"))
        except FileNotFoundError:
            pass
    else:
        with ctx["lock"]:
            absorb(d, out)
    left = sum(1 for r in todo if not os.path.exists(os.path.join(d, "runs", r["id"] + ".json")))
    try:
        with open(os.path.join(sdir, "boot-failures")) as f:
            sess["boot_failures"] = sum(1 for _ in f)
    except FileNotFoundError:
        sess["boot_failures"] = 0
    sess.update(exit_code=rc, seconds=round(time.time() - t0), pending_after=left,
                host_load=load,
                host_load_mean=round(sum(x[1] for x in load) / len(load), 2) if load else None,
                host_qemu_max=max((x[2] for x in load), default=None))
    with open(os.path.join(sdir, "session.json"), "w") as f:
        json.dump(sess, f, indent=1)
    if rc != 0:
        print("matrix: session %d exited with %d, %d of its %d runs left" % (
            k, rc, left, len(todo)), file=sys.stderr)
    return sess


def main():
    if len(sys.argv) > 1:
        # it takes none: a stray "--help" must not start a guest
        sys.stderr.write("matrix: no arguments, only the environment:\n%s\n" % __doc__.split("\n\n")[1])
        sys.exit(2)
    t_start = time.time()
    try:
        shard = shard_mod.parse(os.environ.get("SHARD"))
        jobs = int(os.environ.get("JOBS") or 1)
        if jobs < 1:
            raise ValueError
    except ValueError as e:
        die(str(e) or "JOBS must be a positive number, not %r" % os.environ.get("JOBS"))
    prof = load_profile(os.environ.get("PROFILE") or "quick")
    submit = os.environ.get("SUBMIT") or ""
    if submit == "slurm":
        if shard:
            die("SUBMIT=slurm makes the shards (SHARDS=N), not SHARD")
        return slurm.submit(prof["name"], pick_dir(prof, os.environ.get("FEEDBACK", "")))
    if submit or os.environ.get("SHARDS"):
        die("SUBMIT=slurm (with SHARDS=N) submits to Slurm; SUBMIT=%r and SHARDS without it "
            "mean nothing" % submit)
    d = pick_dir(prof, os.environ.get("FEEDBACK", ""), shard=shard)
    pf = os.path.join(d, "plan.json")
    if os.path.exists(pf):
        with open(pf) as f:
            plan = json.load(f)
        errs = check_plan(plan)
        if errs:
            die("%s: %s" % (pf, "; ".join(errs)))
        if plan["profile"] != prof:
            print("matrix: note: scripts/profiles/%s.json changed since %s was planned; "
                  "resuming with the stored plan" % (prof["name"], d))
        prof = plan["profile"]
        absorb(d)  # the guests' records of an interrupted JOBS session
        print("matrix: resuming %s (%d of %d runs done)" % (
            d, len(plan["runs"]) - len(pending(d, plan)), len(plan["runs"])))
    else:
        seed = int(os.environ.get("SEED") or prof.get("seed", 1))
        plan = make_plan(prof, seed, os.environ.get("FEEDBACK", ""))
        os.makedirs(os.path.join(d, "runs"), exist_ok=True)
        with open(pf + ".tmp", "w") as f:
            json.dump(plan, f, indent=1)
        os.rename(pf + ".tmp", pf)
        print("matrix: new %s: %d runs, seed %d" % (d, len(plan["runs"]), plan["seed"]))
    print("matrix: profile %s: %s" % (prof["name"], prof.get("note", "")))
    if shard:
        mine = shard_mod.select(plan["runs"], shard)
        print("matrix: shard %s: %d of the %d runs, %d to make" % (
            shard_mod.fmt(shard), len(mine), len(plan["runs"]), len(pending(d, plan, shard))))

    env = dict(os.environ)
    accel = env.get("ACCEL", "auto")
    if accel == "auto":
        accel = subprocess.run([vm_runner(), "-p"], capture_output=True,
                               text=True).stdout.strip() or "tcg"
    env["ACCEL"] = accel
    os.makedirs(os.path.join(d, "sessions"), exist_ok=True)
    meta_path = os.path.join(d, "meta.json")
    meta = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    if prof.get("kind") == "impair":
        meta["command"] = impair_plan.command(prof)
    meta.setdefault("command", "make matrix PROFILE=%s%s" % (
        prof["name"], (" FEEDBACK=" + plan["feedback"]) if plan["feedback"] else ""))
    meta.setdefault("profile", prof["name"])
    meta.setdefault("seed", plan["seed"])
    meta.setdefault("feedback", plan["feedback"])
    meta.setdefault("created", datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    meta.setdefault("sessions", [])
    if shard and shard_mod.fmt(shard) not in meta.setdefault("shards", []):
        meta["shards"].append(shard_mod.fmt(shard))

    ctx = {"accel": accel, "shard": shard, "jobs": jobs, "env": env, "lock": threading.Lock(),
           "timeout": int(os.environ.get("MATRIX_VM_TIMEOUT") or prof.get("vm_timeout_s", 3600))}
    for attempt in range(3):
        todo = pending(d, plan, shard)
        if not todo:
            break
        parts = shard_mod.split(todo, jobs)
        k0 = max([int(x) for x in os.listdir(os.path.join(d, "sessions")) if x.isdigit()],
                 default=0) + 1
        if len(parts) == 1:
            done = [guest_session(k0, parts[0], d, d, plan, ctx)]
        else:
            # one guest per share, side by side, each in its own directory
            done = [None] * len(parts)

            def one(j):
                out = os.path.join(d, "jobs", "%02d" % (k0 + j))
                done[j] = guest_session(k0 + j, parts[j], out, d, plan, ctx)
            ths = [threading.Thread(target=one, args=(j,)) for j in range(len(parts))]
            for t in ths:
                t.start()
            for t in ths:
                t.join()
            done = [s for s in done if s]
        meta["sessions"] += done
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=1)
        if len(pending(d, plan, shard)) == len(todo):
            break
    left = pending(d, plan, shard)
    if left:
        die("%d of %d runs%s are missing in %s; run the same command again to resume" % (
            len(left), len(shard_mod.select(plan["runs"], shard)),
            " of shard " + shard_mod.fmt(shard) if shard else "", d))
    rest = pending(d, plan)
    if rest:
        print("matrix: shard %s complete in %s; %d runs of other shards are missing: merge "
              "their directories into it with scripts/ecnproxy merge %s OTHER_DIR..." % (
                  shard_mod.fmt(shard), d, len(rest), d))
        print("matrix: done in %d s" % (time.time() - t_start))
        return 0
    rc = subprocess.run([sys.executable, "-m", "ecnproxy", "analyze", d],
                        env=python_env()).returncode
    if rc != 0:
        die("analysis failed (exit %d)" % rc)
    print("matrix: done in %d s" % (time.time() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
