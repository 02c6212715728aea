#!/usr/bin/env bash
# On the lent GPU machine (16 cores, no network): the wheels placer needs beside its image's packages (carried in .whl/),
# placer itself, then evaluate.sh over the cores. The GPU is not used: the evaluation is the simulator's, on CPUs.
#   bash experiments/placer-recipe/device.sh OUT WORKERS [SLUG ...]
set -euo pipefail
source "$(dirname "$0")/device-setup.sh"
bash experiments/placer-recipe/evaluate.sh "$@"
