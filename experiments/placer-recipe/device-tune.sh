#!/usr/bin/env bash
# The distil stage's tuning (best's table with the RL winner as a candidate) on the lent machine's CPUs, resuming
# runs/placer after its RL stage: OUT/members.json comes back to be put in runs/placer/distil/ here before --resume.
#   bash experiments/placer-recipe/device-tune.sh OUT SECONDS
set -uo pipefail
out=${1:?OUT}
limit=${2:?SECONDS}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
PATH="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
export PATH OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CUDA_VISIBLE_DEVICES="" PYTHONUNBUFFERED=1
started=$(date +%s)
setsid placer train --config data/configs/placer.toml --out runs/placer --resume --workers 15 >"$out/tune.log" 2>&1 &
train=$!
while kill -0 "$train" 2>/dev/null && [ ! -f runs/placer/distil/members.json ] && [ $(($(date +%s) - started)) -lt "$limit" ]; do
    sleep 5
done
kill -9 -- -"$train" 2>/dev/null
cp runs/placer/distil/members.json "$out/" 2>/dev/null
echo "after $(($(date +%s) - started)) s: $(ls "$out")"
