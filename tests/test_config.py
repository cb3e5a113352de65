import copy
from pathlib import Path

import pytest
import yaml
from paths import REPO

from mirage.cli import main
from mirage.config import load, load_schema, validate
from mirage.errors import ConfigError

CONFIGS = sorted((REPO / "config").glob("*.yaml"))


@pytest.mark.parametrize("path", [p for p in CONFIGS if p.name != "schema.yaml"], ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    load(path)


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda c: c["clusters"]["ls6"].update(source="ftp"), "clusters.ls6.source"),
        (lambda c: c["clusters"]["ls6"]["windows"]["train"].update(start="01/11/2022"), "clusters.ls6.windows.train.start"),
        (lambda c: c["clusters"]["ls6"].update(nodez=3), "clusters.ls6"),
        (lambda c: c.update(seed=-1), "seed"),
        (lambda c: c["split"].pop("horizon_hours"), "split.horizon_hours"),
        (lambda c: c.pop("policies"), "policies"),
        (lambda c: c["clusters"]["ls6"]["windows"]["train"].update(end="2000-01-01"), "clusters.ls6.windows.train"),
        (lambda c: c["clusters"]["ls6"].update(source="file"), "clusters.ls6.path"),
    ],
)
def test_error_names_the_bad_key(mutate, key):
    config = copy.deepcopy(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    mutate(config)
    with pytest.raises(ConfigError, match=f"key `{key}`"):
        validate(config, load_schema())


def test_cli_validate(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("seed: 1\nclusters: {}\nsplit: {history_hours: 1, horizon_hours: 1}\n"
                   "samples: {every_hours: 4, chain_nodes: [1], sim_modes: [compat], shards: 1}\n"
                   "policies: {names: [reactive], costs: {interruption: 1, overlap: 0.5}}\n")
    code = main(["config", "validate", str(bad), "--schema", str(REPO / "config" / "schema.yaml")])
    assert code == 2
    assert "key `clusters`" in capsys.readouterr().err
    assert main(["config", "validate", str(REPO / "config" / "config.yaml")]) == 0
