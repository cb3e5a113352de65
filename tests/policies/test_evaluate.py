import numpy as np
import pandas as pd
import pytest

from mirage.evaluate import evaluate, level_tradeoff, outcomes, to_markdown
from mirage.evaluate.cli import lead_sweeps
from mirage.figures.evaluation import level_tradeoff_figure, x_box_figure, x_cdf_figure
from mirage.figures.style import save
from mirage.policies import Policy, make_policy
from mirage.policies.baselines import lead_sweep
from mirage.outcomes import SampleSet

# Three samples, c_I = 1, c_O = 0.5. Reactive x: 1 (low), 5 (medium), 14 (heavy).
# Oracle costs: s0 min(1.5, 0.25, 1) = 0.25; s1 min(0.5, 2, 5) = 0.5; s2 min(10, 5, 6, 14) = 5.
X = {0: [-3.0, -0.5, 1.0], 1: [-1.0, 2.0, 5.0], 2: [-20.0, -10.0, 6.0, 14.0]}
NODES = {0: 1, 1: 1, 2: 8}


class FixedK(Policy):
    """Submits at a given k per sample; stands in for any policy in a hand computation."""

    def __init__(self, ks):
        self.ks = ks

    def submit_mask(self, points, windows=None):
        return points["k"].to_numpy() == points["sample_id"].map(self.ks).to_numpy()


@pytest.fixture
def tiny():
    t0 = np.datetime64("2023-01-01T00:00:00", "s")
    step = np.timedelta64(600, "s")
    samples, points = [], []
    for sid, xs in X.items():
        n = len(xs)
        samples.append(dict(sample_id=sid, cluster="c", split="validation",
                            chain_nodes=NODES[sid], sample_start=t0, pred_submit=t0,
                            pred_start=t0, pred_end=t0 + (n - 1) * step, n_points=n))
        for k, x in enumerate(xs):
            points.append(dict(sample_id=sid, k=k, t=t0 + k * step, x_h=x, pred_running=True,
                               pred_elapsed_h=k / 6, pred_wait_h=0.0,
                               pred_remaining_h=(n - 1 - k) / 6, f_avg100_wait_h=1.0))
    s = pd.DataFrame(samples)
    for c in ("sample_start", "pred_submit", "pred_start", "pred_end"):
        s[c] = s[c].astype("datetime64[s]")
    p = pd.DataFrame(points)
    p["t"] = p["t"].astype("datetime64[s]")
    return SampleSet(s, p).validate()


def _row(table, nodes, level, policy):
    r = table[(table.chain_nodes == nodes) & (table.load_level == level)
              & (table.policy == policy)]
    assert len(r) == 1
    return r.iloc[0]


def test_evaluate_by_hand(tiny):
    pols = {"reactive": make_policy("reactive"), "early": FixedK({0: 0, 1: 0, 2: 0}),
            "mid": FixedK({0: 1, 1: 1, 2: 1}), "oracle": make_policy("oracle")}
    t = evaluate(pols, tiny, c_I=1.0, c_O=0.5)

    r = _row(t, 1, "all", "early")  # x = -3, -1
    assert (r.n, r.mean_interruption_h, r.median_interruption_h) == (2, 0.0, 0.0)
    assert r.mean_overlap_h == pytest.approx(2.0)
    assert r.overlap_node_hours == pytest.approx(4.0)
    assert r.zero_interruption_share == 1.0
    assert r.interruption_reduction_pct == pytest.approx(100.0)
    assert r.cost == pytest.approx(1.0)          # (1.5 + 0.5) / 2
    assert r.oracle_gap == pytest.approx(0.625)  # 1.0 - (0.25 + 0.5) / 2

    r = _row(t, 1, "all", "mid")  # x = -0.5, 2
    assert r.mean_interruption_h == pytest.approx(1.0)
    assert r.median_interruption_h == pytest.approx(1.0)
    assert r.mean_overlap_h == pytest.approx(0.25)
    assert r.overlap_node_hours == pytest.approx(0.5)
    assert r.zero_interruption_share == 0.5
    assert r.interruption_reduction_pct == pytest.approx(100 * 2 / 3)
    assert r.cost == pytest.approx(1.125)
    assert r.oracle_gap == pytest.approx(0.75)

    r = _row(t, 1, "all", "reactive")  # x = 1, 5
    assert (r.mean_interruption_h, r.median_interruption_h, r.cost) == (3.0, 3.0, 3.0)
    assert r.interruption_reduction_pct == 0.0 and r.zero_interruption_share == 0.0
    assert r.oracle_gap == pytest.approx(2.625)

    r = _row(t, 1, "all", "oracle")  # k = 1, 0 -> x = -0.5, -1
    assert r.cost == pytest.approx(0.375) and r.oracle_gap == pytest.approx(0.0)

    r = _row(t, 8, "heavy", "early")  # x = -20 on 8 nodes
    assert r.n == 1 and r.mean_overlap_h == 20.0 and r.overlap_node_hours == 160.0
    assert r.cost == pytest.approx(10.0) and r.oracle_gap == pytest.approx(5.0)

    assert _row(t, 1, "low", "early").cost == pytest.approx(1.5)
    assert _row(t, 1, "medium", "mid").cost == pytest.approx(2.0)
    # 3 groups of (nodes, level) + 2 "all" groups, 4 policies each
    assert len(t) == (3 + 2) * 4


def test_outcomes_table_and_renderings(tiny, tmp_path):
    pols = {"reactive": make_policy("reactive"), "fixed_lead": make_policy("fixed_lead")}
    pols["fixed_lead"].fit(tiny)
    out = outcomes(pols, tiny)
    assert {"sample_id", "policy", "k", "x_h"} <= set(out.columns)
    assert out[out.policy == "reactive"].x_h.tolist() == [1.0, 5.0, 14.0]
    md = to_markdown(evaluate(pols, tiny))
    assert md.startswith("| cluster |") and "fixed_lead" in md
    for name, draw in (("x_cdf", x_cdf_figure), ("x_box", x_box_figure)):
        png, pdf = save(draw(out, "c"), tmp_path / name)
        assert png.stat().st_size > 0 and pdf.stat().st_size > 0
    # the lead-sweep table evaluate writes: the training sweep and the same leads on the
    # validation samples, with the fitted lead
    sw = lead_sweeps(pols, tiny, 1.0, 0.5)
    assert [(s["policy"].iloc[0], s["split"].iloc[0]) for s in sw] == [
        ("fixed_lead", "train"), ("fixed_lead", "validation")]
    assert (sw[1]["chosen_lead_h"] == pols["fixed_lead"].lead_h_).all()
    assert sw[1]["cost"].tolist() == pytest.approx(
        lead_sweep(tiny, pols["fixed_lead"].leads_)["cost"].tolist())


def test_lead_sweep_by_hand(tiny):
    # points are 10 min apart; lead 1/6 h submits at the second-to-last point
    sw = lead_sweep(tiny, [0.0, 1 / 6])
    assert sw.cost.tolist() == pytest.approx([(1 + 5 + 14) / 3, (0.25 + 2 + 6) / 3])


def _level_table(costs):
    """An evaluation table from {(mode, policy): (low cost, medium cost)} for one chain size."""
    rows = []
    for (mode, policy), by_level in costs.items():
        for level, c in zip(("low", "medium"), by_level):
            rows.append(dict(cluster="c", mode=mode, chain_nodes=8, load_level=level,
                             policy=policy, cost=c))
        rows.append(dict(cluster="c", mode=mode, chain_nodes=8, load_level="all",
                         policy=policy, cost=99.0))  # must play no part in the trade-off
    return pd.DataFrame(rows)


def test_level_tradeoff_needs_one_policy_to_win_every_level(tmp_path):
    # mode a: the low level is won by "lowwin", the medium level by "medwin", no policy wins
    # both; mode b: "both" beats the best baseline at each level.
    table = _level_table({
        ("a", "fixed_lead"): (0.08, 2.3), ("a", "plan_lead"): (0.46, 1.1),
        ("a", "lowwin"): (0.07, 1.9), ("a", "medwin"): (0.30, 1.0),
        ("b", "fixed_lead"): (0.08, 2.3), ("b", "plan_lead"): (0.46, 1.1),
        ("b", "both"): (0.079, 1.09), ("b", "tie"): (0.08, 0.5),
    })
    w = level_tradeoff(table, baselines=("fixed_lead", "plan_lead")).set_index(["mode", "policy"])
    assert w.loc[("a", "lowwin"), ["beats_low", "beats_medium"]].tolist() == [True, False]
    assert w.loc[("a", "medwin"), ["beats_low", "beats_medium"]].tolist() == [False, True]
    assert not w.loc["a", "beats_all_levels"].any()
    assert w.loc[("b", "both"), "beats_all_levels"]
    assert not w.loc[("b", "tie"), "beats_low"]  # equal to the best baseline is not beating it
    assert not w.loc[("b", "plan_lead"), "beats_all_levels"]  # a baseline never beats itself
    assert w.loc[("b", "both"), "low"] == 0.079 and "all" not in w.columns
    # with one key column, and a group that has no baseline at all (no winners there)
    one = table[table["mode"] == "a"].drop(columns="mode")
    nob = table[(table["mode"] == "b") & ~table["policy"].isin(["fixed_lead", "plan_lead"])]
    w1 = level_tradeoff(one.drop(columns="chain_nodes"), baselines=("fixed_lead", "plan_lead"))
    assert not w1["beats_all_levels"].any()
    assert w1.set_index("policy").loc["lowwin", "beats_low"]
    w2 = level_tradeoff(nob, baselines=("fixed_lead", "plan_lead"))
    assert not w2[["beats_low", "beats_medium", "beats_all_levels"]].any().any()
    png, _ = save(level_tradeoff_figure(level_tradeoff(table, ("fixed_lead", "plan_lead"))),
                  tmp_path / "t")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_level_tradeoff_with_a_missing_level_and_zero_costs(tmp_path):
    table = _level_table({("a", "fixed_lead"): (0.0, 2.0), ("a", "oracle"): (0.0, 0.0),
                          ("a", "m"): (0.1, 1.0)})
    table = pd.concat([table, pd.DataFrame([dict(cluster="c", mode="a", chain_nodes=1,
                                                 load_level="low", policy=p, cost=c)
                                            for p, c in (("fixed_lead", 0.2), ("m", 0.1))])])
    w = level_tradeoff(table, baselines=("fixed_lead",)).set_index(["chain_nodes", "policy"])
    # the 1-node group has no medium samples: that level counts for nobody
    assert w.loc[(1, "m"), ["beats_low", "beats_medium", "beats_all_levels"]].tolist() == [
        True, True, True]
    assert w.loc[(8, "m"), ["beats_low", "beats_medium"]].tolist() == [False, True]
    # zero costs on log axes and a group with one level still draw
    assert save(level_tradeoff_figure(level_tradeoff(table, ("fixed_lead",))), tmp_path / "z")[0].exists()
    single = table[table["load_level"] != "medium"]
    assert level_tradeoff_figure(level_tradeoff(single, ("fixed_lead",))) is None


def test_a_policy_of_several_training_seeds_is_their_mean_with_the_spread(tiny, tmp_path):
    """Two fits of one policy (seeds 7 and 8) on the same samples: the table reports each
    metric's mean over the fits, n the sample count; seed_spread the per-seed values."""
    from mirage.evaluate.metrics import per_seed, seed_spread, summarize
    from mirage.figures.evaluation import seed_spread_figure

    a = outcomes({"reactive": make_policy("reactive"), "learned": FixedK({0: 0, 1: 0, 2: 0})},
                 tiny).assign(seed=7)
    b = outcomes({"learned": FixedK({0: 1, 1: 1, 2: 1})}, tiny).assign(seed=8)
    t = summarize(pd.concat([a, b], ignore_index=True))
    r = _row(t, 1, "all", "learned")  # seed 7: x = -3, -1 (cost 1.0); seed 8: -0.5, 2 (1.125)
    assert r.n == 2 and r.seeds == 2
    assert r.cost == pytest.approx((1.0 + 1.125) / 2)
    assert r.overlap_node_hours == pytest.approx((4.0 + 0.5) / 2)  # a mean of totals
    assert r.zero_interruption_share == pytest.approx(0.75)
    assert _row(t, 1, "all", "reactive").seeds == 1
    # one seed: the same numbers as before seeds were counted
    one = summarize(a)
    assert one.drop(columns="seeds").equals(summarize(a.drop(columns="seed")).drop(columns="seeds"))

    spread = seed_spread(per_seed(pd.concat([a, b], ignore_index=True)))
    assert set(spread["policy"]) == {"learned"}  # reactive was fitted once
    c = spread[(spread.metric == "cost") & (spread.chain_nodes == 1)
               & (spread.load_level == "all")].iloc[0]
    assert (c.seeds, c["min"], c["max"], c["values"]) == (2, 1.0, 1.125, "1 1.125")
    assert c["std"] == pytest.approx(np.std([1.0, 1.125], ddof=1))
    assert c.ci_low < c["mean"] < c.ci_high
    assert seed_spread(per_seed(a)).empty
    png, _ = save(seed_spread_figure(spread[spread.chain_nodes == 1],
                                     t[t.chain_nodes == 1], "c", ("reactive",)), tmp_path / "seeds")
    assert png.stat().st_size > 0
