#!/usr/bin/env bash
# The reference's history models at the paper's sizes (width 512, 2 layers, 2 heads, 10 experts,
# 30 epochs, learning rate 1e-4: config/paper.yaml) fitted on a GPU from a finished run's
# samples, then evaluated on its validation samples beside reactive, plan_lead, rf_tuned and the
# oracle. On a CPU the 10-expert mixture takes hours per epoch (docs/policies.md); on one H200
# the transformer fits the real ls6 training set in about 25 s and the mixture in 140 s
# (docs/results-ls6.md).
#
#   bash examples/history-models-gpu.sh SAMPLES OUT [DEVICE] [BUDGET_S]
#
# SAMPLES: results/<run>/<cluster>/<mode>/samples of a finished run (e.g. `snakemake --cores all
# --configfile config/ls6-real.yaml results/ls6-real/ls6/calibrated/samples/summary.json`);
# OUT: a new directory for the models (OUT/models/n<chain nodes>/<policy>, each with fit.json:
# seconds and device), OUT/eval (evaluation.csv/.md, fits.csv) and one log per step;
# DEVICE: cuda (default) or cpu; BUDGET_S (default: none): a step that would start after this
# many seconds is skipped and named in OUT/skipped.txt (the steps run most informative first).
# Width, epochs and the other sizes can be overridden with WIDTH, EPOCHS, EXPERTS, LR, UPDATES;
# the history models fitted, in this order, by POLICIES (default: transformer moe
# transformer_tuned pg_transformer moe_tuned); the policies to compare with by BASELINES
# (default: reactive plan_lead rf_tuned oracle; fitted first, on the CPU); the chain sizes by
# CHAINS (default: 1 8). SEED (default 0) is the fits' seed; CONFIG=config/NAME.yaml takes every
# policy's parameters from that config (over config/defaults.yaml; WIDTH, EPOCHS, EXPERTS, LR and
# UPDATES then do not apply) and its seed unless SEED is set: the workflow's own fits, on DEVICE.
set -euo pipefail
samples=${1:?usage: history-models-gpu.sh SAMPLES OUT [DEVICE] [BUDGET_S]}
out=${2:?usage: history-models-gpu.sh SAMPLES OUT [DEVICE] [BUDGET_S]}
device=${3:-cuda}
budget=${4:-}
[ -f "$samples/samples.parquet" ] || { echo "error: $samples/samples.parquet missing: pass a run's samples directory" >&2; exit 2; }
py=${PYTHON:-python3}
BASELINES=${BASELINES:-reactive plan_lead rf_tuned oracle}
POLICIES=${POLICIES:-transformer moe transformer_tuned pg_transformer moe_tuned}
CHAINS=${CHAINS:-1 8}
W=${WIDTH:-512} E=${EPOCHS:-30} X=${EXPERTS:-10} LR=${LR:-1.0e-4} U=${UPDATES:-50}
seq="\"width\": $W, \"epochs\": $E, \"learning_rate\": $LR"
params="{\"transformer\": {$seq}, \"transformer_tuned\": {$seq}, \"moe\": {$seq, \"experts\": $X},
 \"moe_tuned\": {$seq, \"experts\": $X}, \"pg_transformer\": {$seq, \"updates\": $U}}"
if [ -n "${CONFIG:-}" ]; then  # the config's own parameters (and seed) for every policy
    read -r cfg_seed params < <("$py" -c 'import json, sys
from mirage.config import load
c = load(sys.argv[1])
print(c["seed"], json.dumps(c["policies"].get("params", {})))' "$CONFIG") || { echo "error: cannot read $CONFIG" >&2; exit 2; }
    SEED=${SEED:-$cfg_seed}
fi
seed=${SEED:-0}
# on cuda, float32 matrix products run on the TF32 tensor cores (PyTorch's own switch); TF32=0
# keeps full float32 there, TF32=1 asks for it elsewhere
tf32=${TF32:-$([ "$device" = cuda ] && echo 1 || echo 0)}
[ "$tf32" = 1 ] && export TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
mkdir -p "$out/models" "$out/eval"
start=$(date +%s)
: > "$out/skipped.txt"

fit() {  # fit NODES POLICY... (a tuned policy takes its untuned twin's final fit)
    local n=$1; shift
    local elapsed=$(( $(date +%s) - start ))
    if [ -n "$budget" ] && [ "$elapsed" -ge "$budget" ]; then echo "n$n $* (budget spent at ${elapsed} s)" >> "$out/skipped.txt"; return 0; fi
    local outs=() final=()
    for p in "$@"; do
        outs+=("$out/models/n$n/$p")
        case $p in *_tuned) final=(--final-from "$out/models/n$n/${p%_tuned}") ;; esac
    done
    # --params: one policy's parameters, or for several a map of the ones fitted here
    local p=$("$py" -c 'import json, sys; a = json.loads(sys.argv[1]); n = sys.argv[2:]
print(json.dumps(a.get(n[0], {}) if len(n) == 1 else {k: v for k, v in a.items() if k in n}))' "$params" "$@")
    echo "[$(( $(date +%s) - start )) s] fit n$n: $*"
    "$py" -m mirage fit "$@" --samples "$samples" --chain-nodes "$n" --seed "$seed" --params "$p" \
        --device "$device" --threads "$(nproc)" "${final[@]}" --out "${outs[@]}" \
        > "$out/fit_n${n}_${1}.log" 2>&1 || { echo "fit n$n $* failed: see $out/fit_n${n}_${1}.log" >&2; return 1; }
}

for n in $CHAINS; do fit "$n" $BASELINES; done
for p in $POLICIES; do
    for n in $CHAINS; do fit "$n" "$p"; done
done

# evaluate what was fitted at every chain size
policies=()
for p in $BASELINES $POLICIES; do
    all=1
    for n in $CHAINS; do [ -f "$out/models/n$n/$p/fit.json" ] || all=0; done
    [ "$all" = 1 ] && policies+=("$p")
done
if [ "${#policies[@]}" = 0 ]; then echo "error: nothing fitted at every chain size ($CHAINS): see $out/skipped.txt and the logs" >&2; exit 1; fi
mode=$(basename "$(dirname "$samples")")
echo "[$(( $(date +%s) - start )) s] evaluate: ${policies[*]}"
"$py" -m mirage evaluate --run "$mode" "$samples" "$out/models" --policies "${policies[@]}" \
    --device "$device" --out-dir "$out/eval" > "$out/evaluate.log" 2>&1
"$py" - "$out" <<'EOF'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1])
for f in sorted(root.glob("models/n*/*/fit.json")):
    fit = json.loads(f.read_text())
    keep = {k: fit[k] for k in ("fit_seconds", "train_samples", "train_points") if k in fit}
    print(f.parent.parent.name, f.parent.name, keep)
ev = root / "eval" / "evaluation.csv"
if ev.exists():
    import pandas as pd
    t = pd.read_csv(ev)
    cols = ["mode", "chain_nodes", "policy", "n", "mean_interruption_h", "mean_overlap_h",
            "zero_interruption_share", "cost", "oracle_gap"]
    print(t[t["load_level"] == "all"][cols].sort_values(["chain_nodes", "cost"]).to_string(index=False))
EOF
echo "[$(( $(date +%s) - start )) s] done (TF32 $tf32); skipped: $(tr '\n' ';' < "$out/skipped.txt")"
