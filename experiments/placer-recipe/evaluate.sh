#!/usr/bin/env bash
# The recipe-built policy (data/policies/placer.pt, `learned:placer`) on the README's regimes: the commands of
# `python -m tools.figures`' placer-figures (tools/figures/registry.py), the regimes named (default: all six) at once, each
# over WORKERS processes, into runs/figures/placer-figures/<slug>/ as the figure keeps them.
#   bash experiments/placer-recipe/evaluate.sh COPY_DIR WORKERS [SLUG ...]
# COPY_DIR also receives each regime's results.json as <slug>.json, and evaluate.log the end of each regime's log.
set -euo pipefail
copy=${1:?COPY_DIR}
workers=${2:?WORKERS}
shift 2
regimes="--queue edf-bf --size loguniform:0.1:10 --beta-dist A,B,C,D --seeds 10 --jobs 500 --load 0.5,0.9,1.3 --workers $workers"
[ -z "${SMOKE:-}" ] || regimes="--queue edf-bf --size loguniform:0.1:10 --beta-dist A --seeds 1 --jobs 20 --load 0.5 --workers $workers"  # a check of this script
declare -A runs=(
    [dgx8x8-poisson]="--cluster dgx8x8 $regimes"
    [mixed-poisson]="--cluster mixed $regimes"
    [dgx8x8-daily]="--cluster dgx8x8 $regimes --structure daily"
    [mixed-daily]="--cluster mixed $regimes --structure daily"
    [dgxh100-poisson]="--cluster dgxh100 $regimes"
    [dgx8x8-philly-arrivals]="--cluster dgx8x8 $regimes --structure replay:philly"
)
slugs=("$@")
[ ${#slugs[@]} -gt 0 ] || slugs=("${!runs[@]}")
mkdir -p "$copy" runs/figures/placer-figures/logs
started=$(date +%s)
for slug in "${slugs[@]}"; do
    # shellcheck disable=SC2086
    (placer evaluate ${runs[$slug]} --policies learned:placer --out "runs/figures/placer-figures/$slug" >"runs/figures/placer-figures/logs/$slug.log" 2>&1 &&
        cp "runs/figures/placer-figures/$slug/results.json" "$copy/$slug.json" &&
        echo "$slug done at $(($(date +%s) - started)) s") &
done
wait
tail -n 4 runs/figures/placer-figures/logs/*.log >"$copy/evaluate.log" || true
echo "${#slugs[@]} evaluations in $(($(date +%s) - started)) s"
