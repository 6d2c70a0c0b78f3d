# SPDX-License-Identifier: GPL-2.0
"""Shards, parallel guests, merging and the Slurm submission of make matrix
(issue 45), on the host only: the guest runner is the stand-in
scripts/tests/standin-vm-run (no VM), sbatch a stand-in that records its
arguments.  The one-node Slurm itself: scripts/slurm-selftest (make
slurmtest)."""
import csv
import glob
import json
import os
import shutil
import subprocess

import pytest

from ecnproxy.host import matrix, merge, shard
from ecnproxy.paths import TOP, python_env

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "standin-vm-run")


def test_shards_partition_the_plan():
    plan = matrix.make_plan(matrix.load_profile("smoke"), 1, "")
    runs = plan["runs"]
    for n in range(1, 6):
        parts = [shard.select(runs, (i, n)) for i in range(1, n + 1)]
        ids = [r["id"] for p in parts for r in p]
        assert sorted(ids) == sorted(r["id"] for r in runs) and len(set(ids)) == len(ids)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        for p in parts:  # in the plan's order
            assert [r["index"] for r in p] == sorted(r["index"] for r in p)
    # the plan is drawn from the seed alone: every shard, anywhere, has it
    assert matrix.make_plan(matrix.load_profile("smoke"), 1, "") == plan
    assert shard.split(list(range(5)), 2) == [[0, 2, 4], [1, 3]]
    assert shard.split([1], 4) == [[1]]


@pytest.mark.parametrize("name", sorted(os.path.basename(p)[:-5] for p in glob.glob(
    os.path.join(TOP, "scripts", "profiles", "*.json"))))
def test_every_profile_shards(name):
    """matrix, fairness and impairment plans alike: runs indexed in order."""
    prof = matrix.load_profile(name)
    runs = matrix.make_plan(prof, prof.get("seed", 1), "")["runs"]
    assert [r["index"] for r in runs] == list(range(len(runs)))
    parts = [shard.select(runs, (i, 3)) for i in (1, 2, 3)]
    assert sum(map(len, parts)) == len(runs)


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1", "a/b", "1/2/3"])
def test_bad_shard(spec):
    with pytest.raises(ValueError):
        shard.parse(spec)
    assert shard.parse("2/3") == (2, 3) and shard.parse("") is None


def test_modinfo(tmp_path):
    ko = tmp_path / "m.ko"
    ko.write_bytes(b"\x7fELF junk\0license=GPL\0srcversion=ABC123\0vermagic=6.1.0 SMP\0x")
    mi = shard.modinfo(str(ko))
    assert mi["srcversion"] == "ABC123" and mi["vermagic"] == "6.1.0 SMP"
    assert len(mi["sha256"]) == 64 and shard.modinfo(str(tmp_path / "none.ko")) is None


def test_a_shard_resumes_the_directory_its_runs_are_missing_in(tmp_path, monkeypatch):
    monkeypatch.delenv("MATRIX_OUT", raising=False)
    d = tmp_path / "smoke-20261201"
    (d / "runs").mkdir(parents=True)
    runs = [{"id": "r%d" % i, "index": i} for i in range(4)]
    (d / "plan.json").write_text(json.dumps({"feedback": None, "runs": runs}))
    for r in shard.select(runs, (1, 2)):
        (d / "runs" / (r["id"] + ".json")).write_text("{}")
    prof = {"name": "smoke"}
    assert matrix.pick_dir(prof, "", str(tmp_path), shard=(2, 2)) == str(d)
    assert matrix.pick_dir(prof, "", str(tmp_path), shard=(1, 2)) != str(d)
    assert matrix.pick_dir(prof, "", str(tmp_path)) == str(d)


def run_matrix(out, **env):
    e = python_env(dict(os.environ, PROFILE="smoke", ACCEL="tcg", VM_RUN=STANDIN,
                        MATRIX_OUT=str(out), STANDIN_DELAY_S="0", **env))
    for k in ("SHARD", "JOBS", "SUBMIT", "SHARDS", "KEEP_PCAPS", "FEEDBACK", "SEED"):
        if k not in env:
            e.pop(k, None)
    return subprocess.run([os.path.join(TOP, "scripts", "matrix")], env=e, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)


def ecnproxy(*args):
    return subprocess.run([os.path.join(TOP, "scripts", "ecnproxy")] + list(args),
                          env=python_env(), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=600)


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """smoke in one run, in two shards (the stand-in guest), the shards
    merged, and in one run of two guests side by side (JOBS=2)."""
    t = tmp_path_factory.mktemp("shards")
    out = {"single": run_matrix(t / "single"),
           "s1": run_matrix(t / "s1", SHARD="1/2"),
           "s2": run_matrix(t / "s2", SHARD="2/2"),
           "jobs": run_matrix(t / "jobs", JOBS="2")}
    out["merge"] = ecnproxy("merge", str(t / "merged"), str(t / "s1"), str(t / "s2"))
    return t, out


def test_shards_merge_into_the_single_runs_result(made):
    t, out = made
    for k, p in out.items():
        assert p.returncode == 0, (k, p.stdout[-3000:])
    assert "shard 1/2 complete" in out["s1"].stdout
    assert not (t / "s1" / "summary.md").exists()  # half a plan is not analysed
    assert len(os.listdir(t / "s1" / "runs")) == 18
    assert sorted(os.listdir(t / "merged" / "runs")) == sorted(os.listdir(t / "single" / "runs"))
    chk = ecnproxy("check", str(t / "merged"))
    assert chk.returncode == 0 and "not ok" not in chk.stdout, chk.stdout
    # the stand-in's records depend on the run alone: the same report
    assert read_csv(t / "merged" / "summary.csv") == read_csv(t / "single" / "summary.csv")
    meta = json.load(open(t / "merged" / "meta.json"))
    assert meta["shards"] == ["1/2", "2/2"] and len(meta["sessions"]) == 2
    assert meta["merge"]["guest_sessions"] == 2 and meta["merge"]["flags"] == []
    assert sorted(os.listdir(t / "merged" / "sessions")) == ["01", "02"]
    md = (t / "merged" / "summary.md").read_text()
    assert "made by 2 guest sessions on 1 host" in md and "shards 1/2, 2/2" in md
    # merging again copies nothing and changes nothing
    again = ecnproxy("merge", "--no-analyze", str(t / "merged"), str(t / "s1"), str(t / "s2"))
    assert again.returncode == 0 and "0 records copied" in again.stdout
    assert len(json.load(open(t / "merged" / "meta.json"))["sessions"]) == 2


def test_records_carry_origin_and_host_load(made):
    t, _ = made
    with open(t / "s2" / "runs" / os.listdir(t / "s2" / "runs")[0]) as f:
        rec = json.load(f)
    o = rec["origin"]
    plan = json.load(open(t / "s2" / "plan.json"))
    assert o["plan_sha256"] == shard.plan_digest(plan) and o["shard"] == "2/2"
    assert o["host"] == os.uname().nodename and o["git_commit"]
    assert set(o["modules"]) == {"ecn_proxy", "impair", "tcpfwd"}
    assert rec["host_load"] and rec["host_load"][0]["cpus"] == os.cpu_count()
    assert len(rec["host_load"][0]["sample"]) == 3
    assert rec["host_load"][0]["other_cpu_s"] >= 0


def test_jobs_runs_guests_side_by_side(made):
    t, out = made
    d = t / "jobs"
    assert "[1] session 1: 18 runs" in out["jobs"].stdout
    assert "[2] session 2: 18 runs" in out["jobs"].stdout
    assert not (d / "jobs").exists()  # the guests' directories are folded in
    assert len(os.listdir(d / "runs")) == 36
    assert sorted(os.listdir(d / "sessions")) == ["01", "02"]
    assert (d / "sessions" / "02" / "guest.log").exists()
    ids = {json.load(open(d / "runs" / f))["origin"]["session_id"] for f in os.listdir(d / "runs")}
    assert len(ids) == 2
    chk = ecnproxy("check", str(d))
    assert chk.returncode == 0, chk.stdout
    assert read_csv(d / "summary.csv") == read_csv(t / "single" / "summary.csv")


def tamper(d, f):
    p = sorted((d / "runs").iterdir())[0]
    rec = json.loads(p.read_text())
    f(rec)
    p.write_text(json.dumps(rec))


def test_merge_refuses_another_plan_or_code(made, tmp_path):
    t, _ = made
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(t / "s1", a)
    shutil.copytree(t / "s2", b)
    # other code in one shard: refused, nothing copied
    tamper(b, lambda r: r["origin"].update(git_commit="0" * 40))
    r = ecnproxy("merge", "--no-analyze", str(tmp_path / "m"), str(a), str(b))
    assert r.returncode == 1 and "2 versions of the code" in r.stdout, r.stdout
    assert not (tmp_path / "m").exists()
    # --force: merged, flagged in meta.json
    r = ecnproxy("merge", "--force", str(tmp_path / "m"), str(a), str(b))
    assert r.returncode == 0, r.stdout
    assert any("versions of the code" in f
               for f in json.load(open(tmp_path / "m" / "meta.json"))["merge"]["flags"])
    assert "**merged despite**" in (tmp_path / "m" / "summary.md").read_text()
    # another plan (seed): refused
    p = json.load(open(b / "plan.json"))
    p["seed"] = 2
    (b / "plan.json").write_text(json.dumps(p))
    r = ecnproxy("merge", "--no-analyze", str(tmp_path / "m2"), str(a), str(b))
    assert r.returncode == 1 and "plan.json differs" in r.stdout


def test_merge_flags_module_binaries_but_refuses_other_sources(made, tmp_path):
    t, _ = made
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(t / "s1", a)
    shutil.copytree(t / "s2", b)
    mod = {"sha256": "a" * 64, "srcversion": "S1", "vermagic": "6.1"}

    def setmod(d, m):
        for p in (d / "runs").iterdir():
            rec = json.loads(p.read_text())
            rec["origin"]["modules"]["ecn_proxy"] = m
            p.write_text(json.dumps(rec))
    setmod(a, mod)
    setmod(b, dict(mod, sha256="b" * 64))
    r = ecnproxy("merge", "--no-analyze", str(tmp_path / "m"), str(a), str(b))
    assert r.returncode == 0 and "2 binaries of the same sources" in r.stdout, r.stdout
    setmod(b, dict(mod, srcversion="S2"))
    r = ecnproxy("merge", "--no-analyze", str(tmp_path / "m2"), str(a), str(b))
    assert r.returncode == 1 and "built from 2 sources" in r.stdout, r.stdout


def test_an_incomplete_merge_says_what_is_missing(made, tmp_path):
    t, _ = made
    r = ecnproxy("merge", str(tmp_path / "m"), str(t / "s1"))
    assert r.returncode == 1 and "18 runs are missing" in r.stdout
    assert not (tmp_path / "m" / "summary.md").exists()


SBATCH = """#!/bin/sh
echo "$@" >>"$SBATCH_LOG"
n=$(wc -l <"$SBATCH_LOG")
echo "$((n + 40))"
"""


def test_submit_slurm_makes_an_array_and_a_merge_job(tmp_path):
    (tmp_path / "bin").mkdir()
    sb = tmp_path / "bin" / "sbatch"
    sb.write_text(SBATCH)
    sb.chmod(0o755)
    log = tmp_path / "sbatch.log"
    r = run_matrix(tmp_path / "dest", SUBMIT="slurm", SHARDS="3", JOBS="2",
                   SHARD_DIR=str(tmp_path / "sh"), SLURM_OPTS="--partition=lab",
                   SBATCH_LOG=str(log), PATH="%s:%s" % (tmp_path / "bin", os.environ["PATH"]))
    assert r.returncode == 0, r.stdout
    arr, mrg = log.read_text().splitlines()
    assert "--array=1-3" in arr and "--cpus-per-task=4" in arr and "--partition=lab" in arr
    assert "SHARD=$SLURM_ARRAY_TASK_ID/3" in arr and "-u SUBMIT" in arr
    assert "--dependency=afterany:41" in mrg and "merge %s" % (tmp_path / "dest") in mrg
    assert "%s/3-of-3" % (tmp_path / "sh") in mrg
    assert not (tmp_path / "dest").exists()  # the jobs make it
    r = run_matrix(tmp_path / "dest", SHARDS="3")
    assert r.returncode == 1 and "SUBMIT=slurm" in r.stdout


def test_slurm_packages_only_in_their_own_list():
    """make deps (and so CI) installs scripts/deps.debian; Slurm and munge,
    whose packages start services, only make slurmtest (deps.slurm)."""
    def pkgs(name):
        with open(os.path.join(TOP, "scripts", name)) as f:
            return {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
    slurm = pkgs("deps.slurm")
    assert slurm and not slurm & pkgs("deps.debian")
