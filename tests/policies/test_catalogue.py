"""The policy catalogue (mirage.policies.catalogue): every policy declared once, the rest of the
project reading it; a policy registered through its public interface is fitted, evaluated and
drawn like the project's own."""

import json

import numpy as np
import pandas as pd
import pytest

from mirage.cli import main
from mirage.config import load_schema, validate
from mirage.errors import ConfigError
from mirage.figures import style
from mirage.figures.evaluation import x_cdf_figure
from mirage.policies import Policy, fit_threads, make_policy, replica_names
from mirage.policies.catalogue import BATCH, CATALOGUE, RULE, Entry, registered


class HalfLead(Policy):
    """A toy rule: submit once the running predecessor has at most ``share`` of the training
    samples' mean queue wait (``f_avg100_wait_h``) left; ``lead_h_`` is that lead."""

    name = "half_lead"

    def __init__(self, share: float = 0.5):
        self.params = {"share": share}

    def fit(self, train, seed=0):
        self.lead_h_ = self.params["share"] * float(train.points["f_avg100_wait_h"].mean())
        return self

    def submit_mask(self, points, windows=None):
        return points["pred_running"].to_numpy(dtype=bool) & (
            points["pred_remaining_h"].to_numpy(dtype=float) <= self.lead_h_)


TOY = Entry("half_lead", f"{__name__}:HalfLead", RULE, colour="#123456")


def test_a_registered_policy_is_fitted_evaluated_and_drawn(synth, tmp_path):
    samples, models = tmp_path / "samples", tmp_path / "models"
    synth.save(samples)
    with registered(TOY):
        # fitted by `mirage fit`, with its parameters checked against its constructor
        for nodes in (1, 8):
            assert main(["fit", "reactive", "half_lead", "--samples", str(samples),
                         "--chain-nodes", str(nodes), "--seed", "3",
                         "--params", json.dumps({"half_lead": {"share": 0.25}}),
                         "--out", *[str(models / f"n{nodes}" / p) for p in ("reactive", "half_lead")]]) == 0
        info = json.loads((models / "n8" / "half_lead" / "fit.json").read_text())
        assert (info["policy"], info["params"], info["model"]) == ("half_lead", {"share": 0.25}, "model.joblib")
        # evaluated by `mirage evaluate`: a row per level, its decisions those of the class
        assert main(["evaluate", "--run", "calibrated", str(samples), str(models), "--policies",
                     "reactive", "half_lead", "--out-dir", str(tmp_path / "eval")]) == 0
        table = pd.read_csv(tmp_path / "eval" / "evaluation.csv")
        mine = table[(table["policy"] == "half_lead") & (table["load_level"] == "all")]
        assert mine["n"].sum() == len(synth.split("validation"))  # every validation sample
        out = pd.read_parquet(tmp_path / "eval" / "outcomes.parquet")
        train, val = (_of_nodes(synth.split(split), 8) for split in ("train", "validation"))
        firsts = make_policy("half_lead", share=0.25).fit(train).first_submit_all(val)
        got = out[(out["policy"] == "half_lead") & (out["chain_nodes"] == 8)].set_index("sample_id")["k"]
        assert (got.sort_index().to_numpy() == firsts.sort_index().to_numpy()).all()
        # drawn in its own colour, as a learned (solid) line
        fig = x_cdf_figure(out[out["chain_nodes"] == 8])
        line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label() == "half_lead")
        assert line.get_color() == "#123456" and line.get_linestyle() == "-"
        # accepted in a config's policies.names
        validate(_config_with(["reactive", "half_lead"]), load_schema())
        assert fit_threads("half_lead") == 1 and replica_names("half_lead", 3) == ["half_lead"]
    # gone again outside the block: an unknown name, refused naming the fix
    assert "half_lead" not in CATALOGUE
    with pytest.raises(ConfigError, match="unknown policy 'half_lead'.*Adding a policy"):
        validate(_config_with(["half_lead"]), load_schema())


def _of_nodes(data, nodes):
    return data.subset(data.samples.loc[data.samples["chain_nodes"] == nodes, "sample_id"])


def _config_with(names):
    """The shipped config with ``names`` as its policies."""
    from mirage.config import SCHEMA, load

    config = load(SCHEMA.with_name("config.yaml"))
    return {**config, "policies": {**config["policies"], "names": names}}


def test_the_schema_lists_the_catalogues_policies():
    items = load_schema()["properties"]["policies"]["properties"]["names"]["items"]
    assert items["enum"] == list(CATALOGUE.names())


def test_every_entry_names_a_policy_class_that_takes_its_fixed_arguments():
    import inspect

    for entry in CATALOGUE:
        cls = entry.load_class()
        assert issubclass(cls, Policy), entry.name
        assert set(entry.fixed) <= set(inspect.signature(cls.__init__).parameters), entry.name
        assert entry.torch == hasattr(cls, "config_class"), entry.name


def test_a_tuned_policy_tunes_a_policy_of_its_own_class_and_kind():
    for name, untuned in CATALOGUE.tuned_of().items():
        a, b = CATALOGUE[name], CATALOGUE[untuned]
        assert (a.cls, a.kind, a.seeded) == (b.cls, b.kind, b.seeded), name
        assert style.policy_style(name)["ls"] != style.policy_style(untuned)["ls"]


def test_an_entry_refuses_what_the_catalogue_cannot_use():
    with pytest.raises(ValueError, match="kind 'gpu' is none of"):
        Entry("x", "m:C", "gpu")
    with pytest.raises(ValueError, match="is not 'module:Class'"):
        Entry("x", "mirage.policies.baselines.Reactive", RULE)
    with pytest.raises(ValueError, match="already in the catalogue"):
        CATALOGUE.add(Entry("rf", "mirage.policies.trees:RegressorPolicy", BATCH))
    with pytest.raises(ValueError, match="declare the untuned policy first"):
        CATALOGUE.add(Entry("lgbm_tuned", "mirage.policies.trees:RegressorPolicy", BATCH, tunes="lgbm"))
    with pytest.raises(KeyError, match="unknown policy 'nope'; known: reactive"):
        CATALOGUE["nope"]


def test_the_fingerprint_of_mirage_fit_and_only_of_it_covers_every_policy_module():
    from mirage.fingerprint import closure

    mods = closure("mirage.policies.cli")
    assert {e.module for e in CATALOGUE} <= set(mods)
    assert np.isin(["mirage.policies.catalogue", "mirage.policies.fitting"], list(mods)).all()
    # what reads only the catalogue's names (the config's schema, the figures' colours) does
    # not rerun on an edit of a policy
    for light in ("mirage.config", "mirage.figures.style"):
        assert "mirage.policies.dqn" not in closure(light), light


def test_the_reinforcement_learning_policies_are_the_seeded_torch_ones():
    from mirage.policies.catalogue import CATALOGUE

    rl = CATALOGUE.reinforcement_learning()
    assert {"dqn", "dqn_tuned", "pg", "pg_tuned", "ppo", "ppo_tuned"} <= set(rl)
    assert not {"rf", "reactive", "pg_transformer", "transformer"} & set(rl)
    assert CATALOGUE.reinforcement_learning(tuned=False) == tuple(
        n for n in rl if not n.endswith("_tuned"))
