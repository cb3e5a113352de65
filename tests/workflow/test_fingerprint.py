"""A rule's code fingerprint follows the package modules it runs (mirage.fingerprint)."""

import shutil
from runs import copy_checkout, snakemake

from mirage.fingerprint import ROOT, closure, fingerprint


def test_closure_follows_imports_inside_functions_and_package_parents():
    mods = closure("mirage.policies.cli")
    # imported lazily inside functions of policies/cli.py and the registry
    assert {"mirage.policies.dqn", "mirage.policies.registry", "mirage.policies"} <= set(mods)
    assert "mirage.live.provision" not in mods  # nothing of the live side


def test_a_change_reruns_the_rules_that_import_it_and_only_those(tmp_path):
    root = tmp_path / "mirage"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    before = {m: fingerprint(m, root=root) for m in ("mirage.policies.cli", "mirage.traces.clean")}
    dqn = root / "policies" / "dqn.py"
    dqn.write_text(dqn.read_text() + "\n# a change\n")
    after = {m: fingerprint(m, root=root) for m in before}
    assert after["mirage.policies.cli"] != before["mirage.policies.cli"]
    assert after["mirage.traces.clean"] == before["mirage.traces.clean"]


def test_snakemake_reruns_the_fits_when_the_policy_code_changes(tiny_run, tmp_path):
    # the rules carry the fingerprint as a param, which Snakemake's rerun triggers compare
    repo = copy_checkout(tmp_path / "repo")
    work = tmp_path / "work"
    shutil.copytree(tiny_run, work, symlinks=True)
    args = ["-n", "-s", str(repo / "Snakefile"), "-d", str(work), "--configfile",
            str(repo / "config" / "tiny.yaml")]
    res = snakemake(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rule fit_torch:" not in res.stdout and "rule sample_shard:" not in res.stdout
    dqn = repo / "src" / "mirage" / "policies" / "dqn.py"
    dqn.write_text(dqn.read_text() + "\n# a change\n")
    res = snakemake(*args)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rule fit_torch:" in res.stdout and "Params have changed" in res.stdout
    assert "rule sample_shard:" not in res.stdout and "rule clean_trace:" not in res.stdout
