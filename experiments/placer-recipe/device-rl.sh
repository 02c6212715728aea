#!/usr/bin/env bash
# The recipe's RL stage on the lent GPU machine's 16 CPU cores (the GPU is not used), resuming runs/placer from its
# finished clone stage: `placer train --config data/configs/placer.toml --out runs/placer --resume --workers 5` runs the
# three seeds at once, each validating over 5 processes. Every 20 s (and at the end) the RL folders are packed into
# OUT/rl.tgz, so a run cut short by the call's limit comes back to be resumed here with --resume.
#   bash experiments/placer-recipe/device-rl.sh OUT SECONDS
set -uo pipefail
out=${1:?OUT}
limit=${2:?SECONDS}
source "$(dirname "$0")/device-setup.sh"
pack() {
    tar czf "$out/rl.tgz.tmp" runs/placer/rl-seed* runs/placer/rl.json runs/placer/rl-winner.pt 2>/dev/null
    mv "$out/rl.tgz.tmp" "$out/rl.tgz"
}
started=$(date +%s)
setsid placer train --config data/configs/placer.toml --out runs/placer --resume --workers 5 >"$out/train.log" 2>&1 &
train=$!
while kill -0 "$train" 2>/dev/null; do
    sleep 20
    pack
    if [ -f runs/placer/rl.json ] || [ $(($(date +%s) - started)) -ge "$limit" ]; then break; fi
done
kill -- -"$train" 2>/dev/null; sleep 2; kill -9 -- -"$train" 2>/dev/null
pack
echo "stopped after $(($(date +%s) - started)) s; rl.json: $(cat runs/placer/rl.json 2>/dev/null || echo none)"
grep -v "it/s\]" "$out/train.log" | tail -n 40
