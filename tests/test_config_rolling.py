"""The rolling-origin evaluation's config key (clusters.<c>.rolling, config/ls6-rolling.yaml)."""

import copy

import pytest
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
    assert config["policies"] == real["policies"] and config["run"] == "ls6-real"
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
