import copy

import pytest
import yaml
from paths import REPO, shipped_config

from mirage.cli import main
from mirage.config import layered, load, load_schema, merge, run_name, validate
from mirage.errors import ConfigError

CONFIGS = sorted((REPO / "config").glob("*.yaml"))


@pytest.mark.parametrize("path", [p for p in CONFIGS if p.name not in ("schema.yaml", "defaults.yaml")],
                         ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    shipped_config(path)


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
        # the synthetic trace's own scheduler exists only for a synthetic trace
        (lambda c: c["clusters"]["ls6"].update(description="generator"),
         "clusters.ls6.description"),
        (lambda c: c["samples"].update(train_every_hours=0), "samples.train_every_hours"),
        (lambda c: c["evaluation"].update(block_hours=-1), "evaluation.block_hours"),
    ],
)
def test_error_names_the_bad_key(mutate, key):
    config = copy.deepcopy(layered(REPO / "config" / "config.yaml"))
    mutate(config)
    with pytest.raises(ConfigError, match=f"key `{key}`"):
        validate(config, load_schema())


def test_cli_validate(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text("seed: 1\nclusters: {}\nsplit: {history_hours: 1, horizon_hours: 1}\n"
                   "samples: {every_hours: 4, chain_nodes: [1], sim_modes: [compat], shards: 1}\n"
                   "policies: {names: [reactive], costs: {c_I: 1, c_O: 0.5}}\n")
    code = main(["config", "validate", str(bad), "--schema", str(REPO / "config" / "schema.yaml")])
    assert code == 2
    assert "key `clusters`" in capsys.readouterr().err
    assert main(["config", "validate", str(REPO / "config" / "config.yaml")]) == 0
    # an overlay is checked over the base its run names, as Snakemake merges them
    capsys.readouterr()
    assert main(["config", "validate", str(REPO / "config" / "ls6-rolling.yaml")]) == 0
    assert "ls6-real.yaml + " in capsys.readouterr().out
    # a config outside config/ (a user's own) is checked against the checkout's schema
    own = tmp_path / "mine.yaml"
    own.write_text((REPO / "config" / "tiny.yaml").read_text())
    assert main(["config", "validate", str(own)]) == 0
    capsys.readouterr()
    assert main(["config", "validate", str(own), "--schema", str(tmp_path / "no.yaml")]) == 2
    assert "no schema" in capsys.readouterr().err


def test_configs_layer_on_the_defaults_and_name_their_run():
    real = load(REPO / "config" / "ls6-real.yaml")
    defaults = yaml.safe_load((REPO / "config" / "defaults.yaml").read_text())
    # the real-trace configs run the paper's 15 policies; the history models have their own
    history = load(REPO / "config" / "ls6-history.yaml")
    sequence = {"transformer", "transformer_tuned", "moe", "moe_tuned", "pg_transformer"}
    assert len(real["policies"]["names"]) == 15 and not sequence & set(real["policies"]["names"])
    assert set(real["policies"]["names"]) | sequence == set(defaults["policies"]["names"])
    assert sequence <= set(history["policies"]["names"])
    assert history["clusters"]["ls6"]["windows"] == real["clusters"]["ls6"]["windows"]
    feb = load(REPO / "config" / "ls6-feb.yaml")
    # the second validation month: the same policies with the same settings
    assert feb["policies"]["names"] == real["policies"]["names"]
    assert feb["policies"]["params"] == real["policies"]["params"]
    assert list(real["clusters"]) == ["ls6"]
    assert run_name(real, REPO / "config" / "ls6-real.yaml") == "ls6-real"
    assert run_name(load(REPO / "config" / "config.yaml"), REPO / "config" / "config.yaml") == "default"
    tiny = load(REPO / "config" / "tiny.yaml")
    assert tiny["samples"]["sim_modes"] == ["calibrated"] and tiny["split"] == defaults["split"]
    # nested mappings merge, lists are replaced (as Snakemake merges config files)
    assert merge({"a": {"b": 1, "c": [1, 2]}}, {"a": {"c": [3]}}) == {"a": {"b": 1, "c": [3]}}


def test_runs_of_two_configs_write_side_by_side():
    from runs import snakemake

    outs = {}
    for name in ("ls6-real", "ls6-feb"):
        res = snakemake("-n", "--forceall", "--configfile", f"config/{name}.yaml")
        assert res.returncode == 0, res.stderr
        outs[name] = {o.strip() for line in res.stdout.splitlines() if "output:" in line
                      for o in line.split("output:")[1].split(",")}
    for name, out in outs.items():
        written = [o for o in out if o.startswith("results/")]
        assert written and all(o.startswith(f"results/{name}/") for o in written), name
    res = snakemake("-n", "--forceall", "--configfile", "config/tiny.yaml", "--config", "run=mine")
    assert res.returncode == 0 and "results/mine/ls6/evaluation.csv" in res.stdout


def test_the_evaluation_defaults_are_the_commands_defaults():
    from mirage.evaluate.metrics import BLOCK_HOURS, EQUIVALENCE_H
    config = load(REPO / "config" / "config.yaml")
    assert config["evaluation"] == {"equivalence_h": EQUIVALENCE_H, "block_hours": BLOCK_HOURS}
