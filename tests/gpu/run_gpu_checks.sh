#!/bin/sh
# run_gpu_checks.sh [SHIM.so]: the CUDA shim on a real NVIDIA GPU with PyTorch.
# Needs: an NVIDIA driver, python3 with torch (CUDA build). Builds the shim with
# `make shim` when no path is given. Prints markdown rows for docs/benchmarks.md
# and exits non-zero if a check misses its target:
#   1. PyTorch allocates up to the cap, then gets torch.cuda.OutOfMemoryError
#   2. torch.cuda.mem_get_info() reports the cap as total
#   3. two processes with shares 0.3 / 0.7 running matmul loops split within 5 points
#   4. a launch-bound loop is at most 2% slower under the shim
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SHIM=${1:-}
if [ -z "$SHIM" ]; then
    make -C "$ROOT" --no-print-directory BUILD=build-gpu shim >/dev/null || exit 1
    SHIM="$ROOT/build-gpu/lib/libtessera-cuda.so"
fi
command -v nvidia-smi >/dev/null 2>&1 || { echo "no NVIDIA driver here"; exit 2; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    { echo "python3 with a CUDA build of torch is required"; exit 2; }
export TESSERA_GPU_SHIM="$SHIM"
exec python3 "$HERE/gpu_checks.py"
