# SPDX-License-Identifier: GPL-2.0
"""make experiments: the impairment experiments (issue 12; docs/testbed.md
"Impairment experiments"), one results directory per experiment.

  scripts/experiments     (environment: EXPERIMENTS, EXP_SCALE, and what
                           scripts/matrix reads: MATRIX_VM_TIMEOUT, ACCEL,
                           KEEP_PCAPS, VM_*, TB_*)

Runs scripts/matrix once per experiment, each a profile of kind "impair"
(scripts/profiles/exp-*.json; EXPERIMENTS="ecn seqrand" picks some, by the
name after "exp-"), at EXP_SCALE quick (default: every experiment's quick
scale, about an hour in all) or full (as long as it needs).  Each
publishes results/exp-NAME-DATE/ (full: exp-NAME-full-DATE/); an
interrupted one resumes when the same command runs again (scripts/matrix
picks the newest incomplete directory of the profile).  Exit 0 when every
experiment is complete and analysed.
"""
import glob
import os
import subprocess
import sys
import time

from ..paths import PROFILES, TOP


def main():
    have = sorted(os.path.basename(p)[len("exp-"):-len(".json")]
                  for p in glob.glob(os.path.join(PROFILES, "exp-*.json")))
    want = (os.environ.get("EXPERIMENTS") or "").split() or have
    bad = [w for w in want if w not in have]
    if bad:
        print("experiments: unknown experiment(s) %s (have: %s)" % (
            ", ".join(bad), ", ".join(have)), file=sys.stderr)
        return 2
    scale = os.environ.get("EXP_SCALE") or "quick"
    if scale not in ("quick", "full"):
        print("experiments: EXP_SCALE must be quick or full, not %r" % scale, file=sys.stderr)
        return 2
    failed = []
    t0 = time.time()
    for w in want:
        env = dict(os.environ, PROFILE="exp-" + w, EXP_SCALE=scale)
        env.pop("MATRIX_OUT", None)
        env.pop("FEEDBACK", None)
        print("experiments: %s (%s)" % (w, scale), flush=True)
        rc = subprocess.run([os.path.join(TOP, "scripts", "matrix")], env=env).returncode
        if rc:
            failed.append(w)
    print("experiments: %d of %d complete in %d s%s" % (
        len(want) - len(failed), len(want), time.time() - t0,
        ("; incomplete: " + ", ".join(failed)) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
