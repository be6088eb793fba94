#!/usr/bin/env bash
# The GPU device check (bench/gpu_check.py) on a machine with a GPU and no network: installs the carried
# wheels (.whl/, when present) into /tmp/site, then runs the check; its log and gpu_check.json go to
# $OUT (default /tmp/gpu_check_out). Arguments go to gpu_check.py (e.g. --skip train_zero3_inprocess).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src"
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "FAIL wheels: pip install of .whl/*.whl"; exit 1; }
  export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore::FutureWarning
OUT="${OUT:-/tmp/gpu_check_out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python3 bench/gpu_check.py --work /tmp/gpu_check --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu_check.log"
exit "${PIPESTATUS[0]}"
