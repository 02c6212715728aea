#!/usr/bin/env bash
# The distil stage's tuning (best's table with the RL winner as a candidate) on the lent machine's CPUs, resuming
# runs/placer after its RL stage: OUT/members.json comes back to be put in runs/placer/distil/ here before --resume.
#   bash experiments/placer-recipe/device-tune.sh OUT SECONDS
set -uo pipefail
out=${1:?OUT}
limit=${2:?SECONDS}
source "$(dirname "$0")/device-setup.sh"
started=$(date +%s)
setsid placer train --config data/configs/placer.toml --out runs/placer --resume --workers 15 >"$out/tune.log" 2>&1 &
train=$!
while kill -0 "$train" 2>/dev/null && [ ! -f runs/placer/distil/members.json ] && [ $(($(date +%s) - started)) -lt "$limit" ]; do
    sleep 5
done
kill -9 -- -"$train" 2>/dev/null
cp runs/placer/distil/members.json "$out/" 2>/dev/null
echo "after $(($(date +%s) - started)) s: $(ls "$out")"
