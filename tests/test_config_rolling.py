"""The rolling-origin evaluation's config key (clusters.<c>.rolling, config/ls6-rolling.yaml)."""

import copy

import pytest
import yaml
from paths import REPO, shipped_config

from mirage.config import layered, load, load_schema, validate
from mirage.errors import ConfigError
from mirage.samples.folds import rolling_folds


def test_ls6_rolling_validates_with_four_monthly_folds_ending_on_its_own_validation_month():
    config = shipped_config(REPO / "config" / "ls6-rolling.yaml")
    ls6 = config["clusters"]["ls6"]
    folds = rolling_folds(ls6["windows"], ls6["rolling"]["validation"], "rolling")
    assert list(folds) == ["2022-12-01", "2023-01-01", "2023-02-01", "2023-03-01"]
    # the last fold is the run's own split: trained on the whole training window
    assert folds["2023-03-01"] == {"train": ("2022-11-01", "2023-02-28"),
                                   "validation": ("2023-03-01", "2023-03-31")}
    real = load(REPO / "config" / "ls6-real.yaml")
    # ls6-real's policies and PPO, with ls6-real's settings
    names = real["policies"]["names"]
    assert config["policies"]["names"] == names[:-1] + ["ppo", names[-1]]
    assert {k: v for k, v in config["policies"].items() if k != "names"} == {
        k: v for k, v in real["policies"].items() if k != "names"}
    assert config["run"] == "ls6-real"
    assert ls6["windows"] == real["clusters"]["ls6"]["windows"]


@pytest.mark.parametrize(("rolling", "key"), [
    ({"validation": [{"start": "12/2022", "end": "2022-12-31"}]},
     "clusters.ls6.rolling.validation.0.start"),
    ({"validation_months": ["2022-12"]}, "clusters.ls6.rolling"),
    ({"validation": []}, "clusters.ls6.rolling.validation"),
])
def test_a_bad_rolling_key_is_named(rolling, key):
    config = copy.deepcopy(layered(REPO / "config" / "config.yaml"))
    config["clusters"]["ls6"]["rolling"] = rolling
    with pytest.raises(ConfigError, match=f"key `{key}`"):
        validate(config, load_schema())


def test_an_overlay_is_merged_over_the_config_its_run_names(tmp_path):
    from mirage.config import load_shipped, overlay_base, shipped_files, shipped_raw

    assert overlay_base(REPO / "config" / "ls6-rolling.yaml") == REPO / "config" / "ls6-real.yaml"
    assert overlay_base(REPO / "config" / "ls6-real.yaml") is None  # its run is itself
    assert overlay_base(REPO / "config" / "config.yaml") is None
    base = tmp_path / "mine.yaml"
    tiny = yaml.safe_load((REPO / "config" / "tiny.yaml").read_text())
    base.write_text(yaml.safe_dump({**tiny, "seed": 7, "run": "mine"}))
    over = tmp_path / "mine-more.yaml"
    over.write_text("run: mine\nsamples: {every_hours: 12}\n")
    config = load_shipped(over)
    assert (config["seed"], config["samples"]["every_hours"], config["run"]) == (7, 12, "mine")
    assert load_shipped(base)["seed"] == 7
    # the files alone, as `mirage expected regenerate` writes them into one: no defaults
    assert shipped_files(over) == [base, over]
    assert shipped_raw(over) == {**tiny, "seed": 7, "run": "mine",
                                 "samples": {**tiny["samples"], "every_hours": 12}}
