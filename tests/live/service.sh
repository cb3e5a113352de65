#!/bin/bash
# A service link that checkpoints and exits 5 s before its time limit.
left=$(squeue -h -j "$SLURM_JOB_ID" -o %L)
IFS=: read -r -a p <<< "${left#*-}"
secs=0; for x in "${p[@]}"; do secs=$((secs * 60 + 10#$x)); done
sleep $((secs > 5 ? secs - 5 : 1))
echo "link $SLURM_JOB_ID done"
