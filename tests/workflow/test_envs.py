"""The conda envs (for users) and the pip requirements (for tests/CI) pin the same versions."""

import re

import yaml
from paths import REPO

# conda-forge names that differ from PyPI's
CONDA_TO_PIP = {"pytorch": "torch"}


def _requirements():
    pins = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def _env_pins(path):
    env = yaml.safe_load(path.read_text())
    pins = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # a pip: section
            for spec in dep.get("pip", []):
                name, version = spec.split("==")
                pins[name.lower()] = version
        else:
            name, _, version = dep.partition("=")
            pins[CONDA_TO_PIP.get(name, name).lower()] = version.lstrip("=")
    return pins


def test_every_pin_is_exact_and_matches():
    reqs = _requirements()
    assert all(re.fullmatch(r"\d+(\.\d+)*", v) for v in reqs.values())
    seen = set()
    envs = sorted((REPO / "envs").glob("*.yaml"))
    assert len(envs) >= 4
    for path in envs:
        pins = _env_pins(path)
        assert pins.pop("python") == "3.11", f"{path.name}: Python minor differs from pyproject"
        for name, version in pins.items():
            assert name in reqs, f"{path.name}: {name} is not pinned in requirements.txt"
            assert version == reqs[name], f"{path.name}: {name}={version} but requirements.txt has {reqs[name]}"
            seen.add(name)
    assert set(reqs) == seen, f"not in any env: {sorted(set(reqs) - seen)}"


def test_python_minor_matches_pyproject():
    text = (REPO / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11,<3.12"' in text
    assert "torch==2.13.0" in text


def test_every_rule_env_exists():
    for smk in (REPO / "rules").glob("*.smk"):
        for env in re.findall(r'conda:\s*\n\s*"\.\./envs/([\w-]+\.yaml)"', smk.read_text()):
            assert (REPO / "envs" / env).exists(), f"{smk.name} names missing env {env}"
