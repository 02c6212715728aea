# Sourced by the device-*.sh scripts on the lent machine (16 CPU cores, no network): the wheels placer needs beside the
# machine's image (carried in .whl/, listed in README.md), placer itself, and one thread per process.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . 2>&1 | tail -3
PATH="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
export PATH OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CUDA_VISIBLE_DEVICES="" PYTHONUNBUFFERED=1
echo "$(python3 --version); torch $(python3 -c 'import torch; print(torch.__version__)')"
