# SPDX-License-Identifier: GPL-2.0
"""make matrix: the thesis throughput matrix in the VM testbed.

  scripts/matrix            (environment: PROFILE, FEEDBACK, SEED, KEEP_PCAPS,
                             MATRIX_OUT, MATRIX_VM_TIMEOUT, ACCEL, VM_*, TB_*)

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

FEEDBACK: the proxy's feedback mode (none, drop, dupack); empty = the
module's default.  KEEP_PCAPS=1 keeps the captures under RESULTS/pcaps/.
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
import subprocess
import sys
import threading
import time

from .. import impair_plan
from ..analysis.schema import CONFIGS, check_plan
from ..paths import PROFILES, TOP, python_env


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
                    fbs = fbs[:1]
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


def git(*args):
    try:
        return subprocess.run(["git", "-C", TOP] + list(args), capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


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


def pick_dir(prof, feedback, base=None):
    """MATRIX_OUT, else the newest results/NAME-DATE* planned with the same
    feedback mode (so that FEEDBACK=drop does not resume a dupack run) if
    it is incomplete, else a new one.  Only the newest is resumed: an older
    unfinished directory was left behind by a newer run (of newer code)."""
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
        if pending(d, plan):
            return d
        break
    day = datetime.date.today().strftime("%Y%m%d")
    d = os.path.join(base, "%s-%s" % (name, day))
    i = 2
    while os.path.exists(d):
        d = os.path.join(base, "%s-%s-%d" % (name, day, i))
        i += 1
    return d


def pending(d, plan):
    return [r for r in plan["runs"]
            if not os.path.exists(os.path.join(d, "runs", r["id"] + ".json"))]


def run_session(argv, env, d, logpath):
    """vm-run, with its own lines shown as they come and the guest's progress
    from RESULTS/guest.log (vm-run passes the guest's stdout on in blocks)."""
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
                print("  " + line, flush=True)
            if done:
                return
            stop.wait(2)

    def host_load():
        # TCG guests have no steal time: other VMs on the host slow the
        # guest's timers and packet path without showing in its /proc/stat.
        # Sample the host's load and the number of QEMU processes instead.
        while not stop.is_set():
            n = 0
            for c in glob.glob("/proc/[0-9]*/comm"):
                try:
                    with open(c) as f:
                        n += f.read().startswith("qemu-system")
                except OSError:
                    pass
            load.append([round(time.time()), round(os.getloadavg()[0], 2), n])
            stop.wait(30)

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
                print(line, end="", flush=True)
        rc = p.wait()
    stop.set()
    th.join()
    tl.join()
    return rc, load


def main():
    if len(sys.argv) > 1:
        # it takes none: a stray "--help" must not start a guest
        sys.stderr.write("matrix: no arguments, only the environment:\n%s\n" % __doc__.split("\n\n")[1])
        sys.exit(2)
    t_start = time.time()
    prof = load_profile(os.environ.get("PROFILE") or "quick")
    d = pick_dir(prof, os.environ.get("FEEDBACK", ""))
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

    env = dict(os.environ)
    accel = env.get("ACCEL", "auto")
    if accel == "auto":
        accel = subprocess.run([os.path.join(TOP, "vm-testbed", "vm-run"), "-p"],
                               capture_output=True, text=True).stdout.strip() or "tcg"
    env["ACCEL"] = accel
    os.makedirs(os.path.join(d, "sessions"), exist_ok=True)
    sessions = sorted(glob.glob(os.path.join(d, "sessions", "*")))
    ko = os.path.join(TOP, "kmod", "ecn_proxy", "ecn_proxy.ko")
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

    timeout = int(os.environ.get("MATRIX_VM_TIMEOUT") or prof.get("vm_timeout_s", 3600))
    for attempt in range(3):
        todo = pending(d, plan)
        if not todo:
            break
        # the guest reads the accelerator from session.json
        with open(os.path.join(d, "session.json"), "w") as f:
            json.dump({"accel": accel}, f)
        k = len(sessions) + attempt + 1
        sess = {"n": k, "start": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "accel": accel, "pending_before": len(todo), "git_commit": git("rev-parse", "HEAD"),
                "git_dirty": git("status", "--porcelain", "--", "kmod", "vm-testbed", "scripts", "py"),
                "ecn_proxy_ko_sha256": sha256(ko),
                "impair_ko_sha256": sha256(os.path.join(TOP, "kmod", "impair", "impair.ko")),
                "tcpfwd_ko_sha256": sha256(os.path.join(TOP, "kmod", "core", "tcpfwd.ko")) if os.path.exists(os.path.join(TOP, "kmod", "core", "tcpfwd.ko")) else None,
                "host": os.uname().nodename,
                "host_cpus": os.cpu_count()}
        argv = [os.path.join(TOP, "vm-testbed", "vm-run"), "-o", d, "-t", str(timeout), "-a", accel,
                "--", os.path.join(TOP, "vm-testbed", "matrix-guest.sh"), d]
        if os.environ.get("KEEP_PCAPS") == "1":
            argv.append("--keep-pcaps")
        print("matrix: session %d: %d runs: %s" % (k, len(todo), " ".join(map(shlex.quote, argv))),
              flush=True)
        t0 = time.time()
        sdir = os.path.join(d, "sessions", "%02d" % k)
        os.makedirs(sdir, exist_ok=True)
        # what this session runs on, kept even if it is interrupted (meta.json
        # is written only when a session ends)
        with open(os.path.join(sdir, "session.json"), "w") as f:
            json.dump(sess, f, indent=1)
        rc, load = run_session(argv, env, d, os.path.join(sdir, "vm-run.log"))
        for fn in ("console.log", "dmesg.txt", "exit-code", "accel"):
            try:
                os.replace(os.path.join(d, fn), os.path.join(sdir, fn))
            except FileNotFoundError:
                pass
        left = len(pending(d, plan))
        sess.update(exit_code=rc, seconds=round(time.time() - t0), pending_after=left,
                    host_load=load,
                    host_load_mean=round(sum(x[1] for x in load) / len(load), 2) if load else None,
                    host_qemu_max=max((x[2] for x in load), default=None))
        meta["sessions"].append(sess)
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=1)
        with open(os.path.join(sdir, "session.json"), "w") as f:
            json.dump(sess, f, indent=1)
        if rc != 0:
            print("matrix: session %d exited with %d, %d runs left" % (k, rc, left), file=sys.stderr)
        if left == len(todo):
            break
    left = pending(d, plan)
    if left:
        die("%d of %d runs are missing in %s; run the same command again to resume" % (
            len(left), len(plan["runs"]), d))
    rc = subprocess.run([sys.executable, "-m", "ecnproxy", "analyze", d],
                        env=python_env()).returncode
    if rc != 0:
        die("analysis failed (exit %d)" % rc)
    print("matrix: done in %d s" % (time.time() - t_start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
