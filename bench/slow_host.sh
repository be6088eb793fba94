#!/usr/bin/env bash
# Run a command as on the slowest 2-core host of this machine kind (AVX2 only, no AVX-512/AMX), on a faster one:
#   - ISA: torch's vector kernels at AVX2 (ATEN_CPU_CAPABILITY), oneDNN capped at AVX2 (so bf16 has no native
#     path and `dtype: auto` resolves to float32, as it does there), MKL asked for AVX2;
#   - speed: a cgroup CPU quota sized so that float32 matrix products on 2 threads run at TARGET_GFLOPS
#     (default 94: 2 x 47 GFLOP/s, one core of the slowest host measured on 1024^2 float32 products).
# Not emulated: vLLM's own compiled CPU kernels keep this host's ISA; memory bandwidth and caches are this host's.
# Needs root and a writable cgroup cpu controller (v1: /sys/fs/cgroup/cpu, v2: /sys/fs/cgroup with +cpu).
#   bash bench/slow_host.sh make run            # what `make run` takes there (prints the calibration first)
#   TARGET_GFLOPS=200 bash bench/slow_host.sh …  # another host
set -euo pipefail
TARGET_GFLOPS=${TARGET_GFLOPS:-94}
PY=${PY:-.venv/bin/python}
export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2

measure() {  # float32 GFLOP/s of 2048^2 products on 2 threads, in the current cgroup
  "$PY" - <<'EOF'
import time, torch
torch.set_num_threads(2)
a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
for _ in range(2):
    a @ b
t, n = time.perf_counter(), 16
for _ in range(n):
    a @ b
print(round(2 * 2048**3 * n / (time.perf_counter() - t) / 1e9, 1))
EOF
}

if [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
  CG=/sys/fs/cgroup/cpu/prm_lessons_slow_host
  mkdir -p "$CG"
  set_quota() { echo 100000 > "$CG/cpu.cfs_period_us"; echo "$1" > "$CG/cpu.cfs_quota_us"; }
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  CG=/sys/fs/cgroup/prm_lessons_slow_host
  mkdir -p "$CG"
  set_quota() { echo "$1 100000" > "$CG/cpu.max"; }
else
  echo "slow_host.sh: no writable cgroup cpu controller (root needed)" >&2
  exit 2
fi

full=$(measure)
quota=$("$PY" -c "print(min(200000, int(200000 * $TARGET_GFLOPS / $full)))")
set_quota "$quota"
echo $$ > "$CG/cgroup.procs"
got=$(measure)
# A shared host's speed drifts (neighbours, frequency): one unthrottled reading has been off by 2.7x. So the
# quota is corrected from the throttled reading itself until it lands within 5 % of the target (6 tries).
for _ in 1 2 3 4 5 6; do
  ok=$("$PY" -c "print(int(abs($got / $TARGET_GFLOPS - 1) <= 0.05))")
  [ "$ok" = 1 ] && break
  quota=$("$PY" -c "print(max(10000, min(200000, int($quota * $TARGET_GFLOPS / max($got, 1e-3)))))")
  set_quota "$quota"
  got=$(measure)
done
if [ "$("$PY" -c "print(int(abs($got / $TARGET_GFLOPS - 1) <= 0.05))")" != 1 ]; then
  echo "slow_host: could not calibrate (${got} GFLOP/s at quota ${quota}, target ${TARGET_GFLOPS}): the host is" \
       "busy; nothing run, retry when it is quiet" >&2
  exit 3
fi
echo "slow_host: float32 2-thread products ${full} GFLOP/s unthrottled (AVX2 paths), quota ${quota}/100000 us of CPU" \
     "-> ${got} GFLOP/s (target ${TARGET_GFLOPS}); host flags:" \
     "$(grep -o 'avx512[a-z_0-9]*\|amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
start=$(date +%s)
status=0
"$@" || status=$?
echo "slow_host: '$*' exit ${status} after $(( $(date +%s) - start )) s under the quota"
exit "$status"
