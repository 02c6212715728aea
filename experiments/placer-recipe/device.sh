#!/usr/bin/env bash
# On the lent GPU machine (16 cores, no network): the wheels placer needs beside its image's packages (carried in .whl/),
# placer itself, then evaluate.sh over the cores. The GPU is not used: the evaluation is the simulator's, on CPUs.
#   bash experiments/placer-recipe/device.sh OUT WORKERS [SLUG ...]
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
PATH="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
export PATH OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CUDA_VISIBLE_DEVICES="" PYTHONUNBUFFERED=1
echo "cores $(nproc); $(python3 --version); placer at $(command -v placer)"
bash experiments/placer-recipe/evaluate.sh "$@"
