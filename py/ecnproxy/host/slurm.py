# SPDX-License-Identifier: GPL-2.0
"""SUBMIT=slurm: `make matrix` (fairness, experiments) as a Slurm job
array, one array task per shard, and a merge job after them (issue 45;
docs/testbed.md, "Shards, parallel guests, Slurm").

  make matrix PROFILE=paper SUBMIT=slurm SHARDS=8 [JOBS=n] [SLURM_OPTS=...]

Array task i runs scripts/matrix with SHARD=i/SHARDS into
SHARD_DIR/i-of-SHARDS/ (default build/shards/NAME-DATE/; a task run again
resumes it); the merge job (sbatch --dependency=afterany on the array)
runs scripts/ecnproxy merge into the results directory scripts/matrix
would pick here (or MATRIX_OUT), then the analysis.  The checkout, with
its built modules, must be on a file system every node mounts at the same
path, and every node needs what `make deps` installs.

SHARDS: the number of shards (default 2); JOBS: guests per task (each
task asks for JOBS x VM_CPUS CPUs, --cpus-per-task); SLURM_OPTS: more
sbatch options (e.g. "--partition=lab --time=12:00:00"); SLURM_WAIT=1
waits for the merge job (sbatch --wait) and exits with its status.  The
environment goes with the jobs (sbatch's --export=ALL), SUBMIT and SHARDS
taken out.
"""
import os
import shlex
import subprocess
import sys

from ..paths import TOP


def sbatch(args, wrap):
    argv = ["sbatch", "--parsable"] + args + ["--wrap", wrap]
    print("matrix: " + " ".join(map(shlex.quote, argv)), flush=True)
    p = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    return p.stdout.strip().split(";")[0] or None, p.returncode


def submit(name, dest, env=None):
    """Submit the shards of profile NAME and their merge into DEST; exit
    status (SLURM_WAIT=1: the merge job's)."""
    env = os.environ if env is None else env
    try:
        n = int(env.get("SHARDS") or 2)
        jobs = int(env.get("JOBS") or 1)
        cpus = jobs * int(env.get("VM_CPUS") or 2)
        if n < 1 or jobs < 1:
            raise ValueError
    except ValueError:
        print("matrix: SHARDS, JOBS and VM_CPUS must be positive numbers", file=sys.stderr)
        return 2
    shards = os.path.abspath(env.get("SHARD_DIR") or os.path.join(
        TOP, "build", "shards", os.path.basename(dest)))
    os.makedirs(shards, exist_ok=True)
    opts = shlex.split(env.get("SLURM_OPTS") or "")
    q = shlex.quote
    task = ("exec env -u SUBMIT -u SHARDS SHARD=$SLURM_ARRAY_TASK_ID/%d "
            "MATRIX_OUT=%s/$SLURM_ARRAY_TASK_ID-of-%d %s" % (
                n, q(shards), n, q(os.path.join(TOP, "scripts", "matrix"))))
    job, rc = sbatch(["--array=1-%d" % n, "--job-name=ecnproxy-%s" % name,
                      "--cpus-per-task=%d" % cpus, "--chdir=" + TOP,
                      "--output=" + os.path.join(shards, "slurm-%A_%a.out")] + opts, task)
    if job is None or rc:
        print("matrix: sbatch failed (%d)" % rc, file=sys.stderr)
        return 1
    merge = "exec %s merge %s %s" % (q(os.path.join(TOP, "scripts", "ecnproxy")), q(dest),
                                     " ".join(q(os.path.join(shards, "%d-of-%d" % (i, n)))
                                              for i in range(1, n + 1)))
    wait = env.get("SLURM_WAIT") == "1"
    mjob, rc = sbatch(["--dependency=afterany:" + job, "--job-name=ecnproxy-%s-merge" % name,
                       "--cpus-per-task=1", "--chdir=" + TOP,
                       "--output=" + os.path.join(shards, "slurm-merge-%j.out")]
                      + [o for o in opts if not o.startswith("--array")]
                      + (["--wait"] if wait else []), merge)
    if mjob is None and not wait:
        print("matrix: sbatch of the merge failed (%d); merge by hand: %s" % (rc, merge[5:]),
              file=sys.stderr)
        return 1
    print("matrix: Slurm job %s: %d shards of %s (logs %s/slurm-%s_*.out); job %s merges "
          "them into %s%s" % (job, n, name, shards, job, mjob or "?", dest,
                              "" if wait else "; squeue -j %s,%s shows them" % (job, mjob)))
    if wait:
        print("matrix: merge job %s ended with %d" % (mjob, rc))
        return 1 if rc else 0
    return 0
