import json
import os
import sys
from pathlib import Path

# Rules run this checkout's package (`python -m mirage ...`), so a conda env needs only the
# dependencies. Without --sdm conda, `python` is the interpreter running Snakemake (e.g. .venv's
# even when it is not activated); a conda env's activation puts its own python first. Jobs
# inherit this environment locally and re-read this file on a Slurm node.
SRC = str(Path(workflow.basedir) / "src")
sys.path.insert(0, SRC)
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p),
    PATH=os.pathsep.join(
        (str(Path(sys.executable).parent), os.environ.get("PATH", ""))
    ),
)

from mirage.config import load_schema, run_name, validate  # noqa: E402
from mirage.fingerprint import fingerprint  # noqa: E402
from mirage.live.slurm import require_cluster  # noqa: E402
from mirage.policies import replica_names  # noqa: E402
from mirage.policies.catalogue import (
    BATCH,
    CATALOGUE,
    HISTORY,
    REPLAYED as REPLAYED_KIND,
    RULE,
)  # noqa: E402
from mirage.samples.folds import rolling_folds  # noqa: E402
from mirage.traces.fetch import PUBLISHED, bundled_trace  # noqa: E402

validate(
    config,
    load_schema(Path(workflow.basedir) / "config" / "schema.yaml"),
    source=", ".join(map(str, workflow.configfiles)) or "config",
)


# On a Slurm run, stop before the first submission when Slurm cannot take jobs (no client
# commands, a controller that does not answer), with one message naming the fix.
onstart:
    if getattr(workflow.executor_plugin, "name", None) == "slurm":
        require_cluster()


# A run writes under results/<run>/ (logs/<run>/, benchmarks/<run>/): the config's `run`, else
# the name of the last --configfile, so runs of different configs sit side by side.
RUN = run_name(config, (workflow.overwrite_configfiles or [None])[-1])
R = f"results/{RUN}"
LOGS = f"logs/{RUN}"
BENCH = f"benchmarks/{RUN}"
CLUSTERS = sorted(config["clusters"])
SPLITS = ["train", "validation"]
MODES = config["samples"]["sim_modes"]
SHARDS = config["samples"]["shards"]
NOTEBOOKS = Path(workflow.basedir) / "notebooks"
NOTEBOOK_NAMES = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
CHAIN_NODES = config["samples"]["chain_nodes"]
POLICIES = config["policies"]["names"]
# how each policy is fitted is its kind in the policy catalogue (mirage.policies.catalogue).
# The torch policies are fitted together, one job per cluster, mode, chain size and training
# seed (a GPU each where the config trains on cuda): the config's seed fits every torch policy
# (models/nK/POLICY, rule fit_torch), seed + k the seeded ones (POLICY-seedK, fit_torch_seed).
# An untuned policy is fitted before its tuned twin, which takes its final fit when the config
# states the same settings for both (the catalogue's Entry.tunes).
TRAINING_SEEDS = config["policies"].get("training_seeds", 1)
TORCH = sorted(
    (p for p in POLICIES if CATALOGUE[p].torch), key=lambda p: bool(CATALOGUE[p].tunes)
)
SEEDED_TORCH = [p for p in TORCH if len(replica_names(p, TRAINING_SEEDS)) > 1]
# ... in two groups of jobs (rules fit_torch / fit_history and their _seed twins), by thread
# count (Entry.threads): the history models on 2, fixed since their numbers depend on it, the
# compact nets of dqn / pg on one (two would gain nothing and hold the second core idle).
# Empty groups are left out.
TORCH_GROUPS = {
    group: (members, CATALOGUE[members[0]].threads)
    for group, members in (
        ("torch", [p for p in TORCH if CATALOGUE[p].kind != HISTORY]),
        ("history", [p for p in TORCH if CATALOGUE[p].kind == HISTORY]),
    )
    if members
}
SEEDED_TORCH_GROUPS = {
    group: (seeded, n_threads)
    for group, (members, n_threads) in TORCH_GROUPS.items()
    if (seeded := [p for p in members if p in SEEDED_TORCH])
}
MODELS = [r for p in POLICIES for r in replica_names(p, TRAINING_SEEDS)]
# the policies whose decisions need the queue (the twin) are replayed on the validation samples,
# one job per cluster, mode and chain size (rule decide_twin)
REPLAYED = [p for p in POLICIES if CATALOGUE[p].kind == REPLAYED_KIND]
# the others (rules and batch models) are fitted together, one job per cluster, mode and chain
# size
BATCHED = [p for p in POLICIES if CATALOGUE[p].kind in (RULE, BATCH)]

# the learning curves of reinforcement-learning policies (policies.learning_curves), one job per
# cluster, mode, chain size and policy (rule learning_curve), drawn in figure `curves`
CURVES = config["policies"].get("learning_curves") or {}
CURVE_POLICIES = CURVES.get("policies", [])
CURVE_RUNS = [
    (mode, nodes)
    for mode in CURVES.get("sim_modes", MODES)
    for nodes in CURVES.get("chain_nodes", CHAIN_NODES)
]

# the rolling-origin evaluation (clusters.<c>.rolling): per cluster that has one, its folds by
# name (the validation start date), each training on the samples before its validation window
# (mirage.samples.folds); rules/rolling.smk
ROLLING = {
    c: rolling_folds(
        cfg["windows"], cfg["rolling"]["validation"], f"clusters.{c}.rolling.validation"
    )
    for c, cfg in sorted(config["clusters"].items())
    if cfg.get("rolling")
}


wildcard_constraints:
    cluster="|".join(CLUSTERS),
    split="|".join(SPLITS),
    mode="|".join(MODES),
    shard=r"\d+",
    nodes=r"\d+",
    k=r"[1-9]\d*",
    fold=r"\d{4}-\d{2}-\d{2}",


# a torch fit asks the cluster for one GPU when the config trains on cuda
GPUS = int(str(config["policies"].get("device", "cpu")).startswith("cuda"))


# the costs per hour of interruption and of overlap (policies.costs), as every command takes them
COST_FLAGS = "--c-I {c_I} --c-O {c_O}".format(**config["policies"]["costs"])


def fit_params(policies):
    """`mirage fit --params` for ``policies``: one policy's parameters, or for several a map
    from each name to its parameters."""
    params = config["policies"].get("params", {})
    if len(policies) == 1:
        return json.dumps(params.get(policies[0], {}))
    return json.dumps({p: params.get(p, {}) for p in policies})


def curve_params(wildcards):
    """`mirage curves --params` of one policy: its policies.params, with the curve's own
    settings (learning_curves.params) over them."""
    own = config["policies"].get("params", {}).get(wildcards.rl, {})
    return json.dumps(
        {wildcards.rl: {**own, **CURVES.get("params", {}).get(wildcards.rl, {})}}
    )


def curve_dirs(cluster="{cluster}"):
    """The learning-curve directories of ``cluster`` as (simulator mode, directory) pairs."""
    return [
        (mode, f"{R}/{cluster}/{mode}/curves/n{nodes}/{rl}")
        for mode, nodes in CURVE_RUNS
        for rl in CURVE_POLICIES
    ]


def curves_flags(wildcards, input):
    """`mirage figures curves` reads every curve directory of the cluster, with its mode."""
    return " ".join(f"--curves {m} {d}" for m, d in curve_dirs(wildcards.cluster))


def code(*modules):
    """A param that changes when the package code a rule runs changes (mirage.fingerprint)."""
    return fingerprint(*modules)


def sim_code(wildcards):
    """The simulator's code and the cluster descriptions it reads (config/clusters): an edit of
    either reruns the sample and fidelity jobs of that cluster."""
    profiles = Path(workflow.basedir) / "config" / "clusters"
    own = profiles / f"{wildcards.cluster}.yaml"
    return fingerprint(
        "mirage.samples.cli",
        "mirage.sim.cli",
        files=[p for p in (own, profiles / "compat.yaml") if p.exists()],
    )


def cluster_cfg(wildcards):
    return config["clusters"][wildcards.cluster]


def hand_written(cluster):
    """Whether config/clusters/<cluster>.yaml describes ``cluster`` for the simulator."""
    return (Path(workflow.basedir) / "config" / "clusters" / f"{cluster}.yaml").exists()


def fitted(cluster):
    """Whether the calibrated mode of ``cluster`` uses a description fitted from its trace
    (rule calibrate_cluster) instead of config/clusters/<cluster>.yaml."""
    choice = config["clusters"][cluster].get("description", "auto")
    if choice == "auto":
        return not hand_written(cluster)
    return choice == "fitted"


def description(wildcards):
    """The description a calibrated-mode job reads (an input) where it is not the hand-written
    one: fitted from the trace, or a synthetic trace's own scheduler; else nothing."""
    if getattr(wildcards, "mode", "calibrated") != "calibrated":
        return []
    if config["clusters"][wildcards.cluster].get("description") == "generator":
        return [f"{R}/{wildcards.cluster}/sim/generator_cluster.yaml"]
    if not fitted(wildcards.cluster):
        return []
    return [f"{R}/{wildcards.cluster}/sim/fitted_cluster.yaml"]


def cluster_file_flag(wildcards):
    return " ".join(f"--cluster-file {p}" for p in description(wildcards))


def raw_trace(wildcards):
    """The raw trace a cluster's config asks for: synthetic, the publisher's file, the copy
    this project ships (data/traces/), or a path."""
    cfg = config["clusters"][wildcards.cluster]
    if cfg["source"] == "synthetic":
        return f"{R}/{wildcards.cluster}/raw/synthetic.log"
    if cfg["source"] == "fetch":
        return f"{R}/{wildcards.cluster}/raw/{PUBLISHED[wildcards.cluster][0]}"
    if cfg["source"] == "bundled":
        return bundled_trace(wildcards.cluster, workflow.basedir)
    return cfg["path"]


def trace_kind(cluster):
    """What a cluster's trace is, for every table and figure that names it."""
    return (
        "synthetic stand-in"
        if config["clusters"][cluster]["source"] == "synthetic"
        else "real"
    )


def clean_flags(wildcards):
    cfg = config["clusters"][wildcards.cluster]
    flags = f"--format {cfg.get('format', 'auto')}"
    if "procs_per_node" in cfg:
        flags += f" --procs-per-node {cfg['procs_per_node']}"
    return flags


def training_flags(wildcards, input):
    """`mirage figures training` reads every mode's model directories."""
    return " ".join(f"--models {m} {R}/{wildcards.cluster}/{m}/models" for m in MODES)


def input_flags(wildcards, input):
    """One `--name path` option per named input (lead_sweep -> --lead-sweep)."""
    return " ".join(
        f"--{name.replace('_', '-')} {path}" for name, path in input.items()
    )


def evaluation_flags(wildcards, input):
    """The inputs' options and the bootstrap's blocks of the headline's intervals."""
    return f"{input_flags(wildcards, input)} {BLOCK_FLAGS}"


def cluster_table(name, label):
    """A cluster's table `<name>.csv` in the report's Tables, captioned by report/<name>_table.rst."""
    return report(
        f"{R}/{{cluster}}/{name}.csv",
        caption=f"../report/{name}_table.rst",
        category="Tables",
        subcategory="{cluster}",
        labels={"table": label, "cluster": "{cluster}"},
    )


def evaluation_table(place, name, label):
    """A table of the evaluation under ``place`` (rules/learn.smk, EVALUATIONS): a cluster's
    in the report (cluster_table), a rolling fold's plain."""
    return (
        cluster_table(name, label)
        if place == "{cluster}"
        else f"{R}/{place}/{name}.csv"
    )


def evaluation_runs(place):
    """`mirage evaluate --run` of every mode's samples and models under ``place``."""
    return lambda w: " ".join(
        f"--run {m} {R}/{place.format_map(w)}/{m}/samples"
        f" {R}/{place.format_map(w)}/{m}/models"
        for m in MODES
    )


def run_document(name, caption, category):
    """A run's document `<name>` in the report, captioned by report/<caption>.rst."""
    return report(
        f"{R}/{name}",
        caption=f"../report/{caption}.rst",
        category=category,
        labels={"document": name},
    )


def parent(name, up=0):
    """For params: the directory holding the input or output `name` (`up` levels above it)."""

    def directory_of(wildcards, input, output):
        files = input if name in input.keys() else output
        path = getattr(files, name)
        return str(Path(path if isinstance(path, str) else path[0]).parents[up])

    return directory_of


#: what the report and the notebooks read beside the tables: the run's results directory, every
#: cluster's label and the config's seed
RUN_PARAMS = {
    "results": parent("evaluations", up=1),
    "labels": json.dumps({c: config["clusters"][c]["label"] for c in CLUSTERS}),
    "seed": config["seed"],
}
#: the bootstrap's blocks of successive samples, for every command with intervals
BLOCK_FLAGS = (
    f"--block-hours {config['evaluation']['block_hours']}"
    f" --every-hours {config['samples']['every_hours']}"
)
#: and the verdicts' equivalence margin, for every command with verdicts
VERDICT_FLAGS = f"--equivalence-h {config['evaluation']['equivalence_h']} {BLOCK_FLAGS}"


#: a cluster's train / validation split of its clean trace (rule split_trace)
SPLIT = {
    part: f"{R}/{{cluster}}/trace/{part}.parquet" for part in ("train", "validation")
}
