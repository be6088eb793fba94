#!/usr/bin/env bash
# The exact pool's pilot: at which pool size N do the PRMs trained on MC labels and on exact labels of the
# same constructed solutions separate on ProcessBench (paired, training resamples included)?
#
# Usage (after `make run`, whose pool is the first point, N = 6 x audit.per_cell = 66):
#   bash bench/pool_pilot.sh            # per_cell 16 and 22: N = 96 and 132
#   bash bench/pool_pilot.sh 8 16       # other sizes
# Each size is an ablation run of its own (runs/pool_n<N>/: MC on the pool without the judge, only the
# `exact` and `mc_hard` PRMs); everything else is read from the base run. Prints, per N, the paired
# F1 difference exact - mc_hard and each against the structure-only baseline, with the wall time of the
# size's run and this host's CPU flags.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(16 22)
echo "host: $(nproc) CPUs; flags: $(grep -o -w -E 'avx2|avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for pc in "${SIZES[@]}"; do
  n=$((6 * pc))
  ov=$(mktemp --suffix=.yaml)
  cat > "$ov" <<YAML
run: {name: pool_n$n, ablation: true, label: "pilot: the exact pool at N = $n (exact and mc_hard only)"}
audit: {per_cell: $pc, judge: false}
trainsets:
  variants: {mc_soft: {enabled: false}, judge: {enabled: false}, human: {enabled: false},
             consensus_hard: {enabled: false}, consensus_soft: {enabled: false}}
  mc_threshold_sweep: [0.0]
YAML
  t0=$(date +%s)
  .venv/bin/snakemake --cores 2 --configfile config/config.yaml "$ov" -q progress \
    -- "runs/pool_n$n/results/tables/processbench_paired.csv" "runs/pool_n$n/results/tables/trainsets.csv"
  echo "N = $n: $(( $(date +%s) - t0 )) s"
  rm -f "$ov"
done
.venv/bin/python - "${SIZES[@]}" <<'PY'
import sys
from pathlib import Path

import pandas as pd

from prm_lessons.artifacts.verdicts import paired_est

paths = [("results/tables", None)] + [(f"runs/pool_n{6 * int(pc)}/results/tables", 6 * int(pc)) for pc in sys.argv[1:]]
print("| N | exact - mc_hard | exact - structure | mc_hard - structure | resamples x cases |")
print("|---|---|---|---|---|")
for d, n in paths:
    p, ts = Path(d) / "processbench_paired.csv", Path(d) / "trainsets.csv"
    if not p.exists():
        continue
    t = pd.read_csv(p)
    sizes = pd.read_csv(ts).set_index("variant")["n_instances"] if ts.exists() else {}
    n = n or int(sizes.get("exact", 0))

    def cell(a, b):  # the verdicts' reader of the paired table (sign flip for a pair stored as (b, a))
        p = paired_est(t, a, b)
        if p is None:
            return "–", ""
        return (f"{100 * p.est.value:+.1f} [{100 * p.est.lo:+.1f}, {100 * p.est.hi:+.1f}]",
                f"{p.n_resamples} x {p.n_cases}")

    (em, rc), (es, _), (ms, _) = cell("exact", "mc_hard"), cell("exact", "structure"), cell("mc_hard", "structure")
    print(f"| {n} | {em} | {es} | {ms} | {rc} |")
PY
