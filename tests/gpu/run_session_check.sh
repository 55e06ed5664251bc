#!/bin/sh
# run_session_check.sh IMAGE: the whole GPU path on a host with an NVIDIA GPU,
# by hand (not part of `make test`; never run yet: no GPU host so far).
#
# A batch session asking for cuda.shares=0.5 goes through the gateway, the
# registry, the scheduler and the agent, which mounts the device nodes, the
# driver libraries and the CUDA shim into the container (docs/cuda-shim.md,
# "How the shim reaches a container"); inside, PyTorch must see one GPU whose
# total memory is the cap (half the device), must fail to allocate beyond it,
# and /etc/ld.so.preload must name the shim. A CPU-only session must see no
# GPU and no preload.
#
# Needs: the NVIDIA driver, and a dev stack with real GPUs, started with
#   TESSERA_DEV_MOCK_GPUS=0 make dev-up
# IMAGE: a glibc image with python3 and a CUDA build of torch, pushed to the
# stack's registry ($TESSERA_OCI_REGISTRY), e.g.
#   docker pull pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime
#   docker tag ... $TESSERA_OCI_REGISTRY/pytorch:latest; docker push ...
# Exits 0 when every check passed, 1 when one failed, 2 when it cannot run.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${1:-}
[ -n "$IMAGE" ] || { echo "usage: $0 IMAGE (python3 + CUDA torch, in the stack's registry)"; exit 2; }
STATE=${TESSERA_STATE_DIR:-$ROOT/.tessera-dev}
[ -f "$STATE/env" ] || { echo "no dev stack env at $STATE/env (TESSERA_DEV_MOCK_GPUS=0 make dev-up)"; exit 2; }
. "$STATE/env"
[ -e /dev/nvidiactl ] || { echo "no /dev/nvidiactl: not an NVIDIA host"; exit 2; }
export TESSERA_ACCESS_KEY="$TESSERA_ADMIN_ACCESS_KEY" TESSERA_SECRET_KEY="$TESSERA_ADMIN_SECRET_KEY"
T="$TESSERA_BIN_DIR/tessera"
"$T" admin image register "$IMAGE" >/dev/null 2>&1 || true

GPU_PY='
import sys, torch
preload = open("/etc/ld.so.preload").read().strip()
assert preload == "/opt/tessera/lib/libtessera-cuda.so", preload
assert torch.cuda.device_count() == 1, torch.cuda.device_count()
free, total = torch.cuda.mem_get_info(0)
phys = torch.cuda.get_device_properties(0).total_memory
print(f"cap {total} of {phys} bytes ({total / phys:.3f}), free {free}")
assert abs(total / phys - 0.5) < 0.01, "total is not half the device"
x = torch.empty(int(total * 0.6), dtype=torch.uint8, device="cuda")
try:
    y = torch.empty(int(total * 0.6), dtype=torch.uint8, device="cuda")
    sys.exit("allocated past the cap")
except torch.cuda.OutOfMemoryError:
    print("over the cap: OutOfMemoryError")
a = torch.randn(2048, 2048, device="cuda"); (a @ a).sum().item()
print("matmul ok")
'
CPU_PY='
import os, torch
assert not os.path.exists("/etc/ld.so.preload")
assert not torch.cuda.is_available()
print("cpu session: no GPU, no preload")
'
fail=0
check() { # name slots code
    sname="gpucheck-$1-$$"
    printf '%s: ' "$1"
    if "$T" session create "$IMAGE" --name "$sname" --type batch -r "$2" \
        --startup-command "python3 -c '$3'" --max-wait 300 >/dev/null 2>&1; then
        echo ok
    else
        echo FAILED; fail=1
    fi
    "$T" session logs "$sname" 2>/dev/null | sed 's/^/    /'
    "$T" session destroy "$sname" >/dev/null 2>&1 || true
}
check gpu "cpu=2,mem=8g,cuda.shares=0.5" "$GPU_PY"
check cpu "cpu=2,mem=8g" "$CPU_PY"
exit $fail
