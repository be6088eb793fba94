#!/usr/bin/env bash
# A real single-node SLURM cluster, and the workflow run through it with the project's SLURM profile.
#
#   .ci/slurm_integration.sh            # CI: install slurm-wlm + munge (Debian, root), start munged,
#                                       # slurmctld, slurmd (CPUs=2), run, check, stop what it started
#   SLURM_CI_REUSE=1 .ci/slurm_integration.sh   # use a controller that is already up (tests/workflow/test_slurm_integration.py)
#
# What runs: the training rule `train_prm` (after `tokenize_trainset`, which a LoRA training reads) for two training-set variants (hard and soft labels) on a
# tiny random-weight base model, typed as users type it at the repository root:
#   snakemake --profile slurm ...       (root `slurm` -> profiles/slurm; profiles/default applied too)
# Only site values are overridden (account/partition/memory that fit this node, squeue status, short
# status-check wait). Checks: both model directories load, every job went through sbatch (SLURM job ids
# in Snakemake's log, `scontrol show job` says COMPLETED on this node), and the training process saw
# that job id (train_metrics.json hardware.slurm_job_id). Writes $WORK/summary.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
SNAKEMAKE="${SNAKEMAKE:-$ROOT/.venv/bin/snakemake}"
WORK="${SLURM_CI_WORKDIR:-$(mktemp -d /tmp/prm-slurm-ci.XXXXXX)}"
REUSE="${SLURM_CI_REUSE:-0}"
HOST="$(hostname -s)"
CONF_DIR=/etc/slurm
STARTED=()   # "name:pidfile" of the daemons this script started (only these are stopped)
WROTE_CONF=0 # 1 once this script has written $CONF_DIR/slurm.conf (removed again with the daemons)

log() { printf '[slurm-ci] %s\n' "$*"; }
die() { printf '[slurm-ci] FAIL: %s\n' "$*" >&2; exit 1; }

stop_started() {
    local entry name pidfile pid
    for entry in "${STARTED[@]:-}"; do
        [ -n "$entry" ] || continue
        name="${entry%%:*}"; pidfile="${entry#*:}"
        pid="$(cat "$pidfile" 2>/dev/null || true)"
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            log "stopping $name (pid $pid)"
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
    done
    # and the config this script wrote: with it and no controller, `scontrol show config` waits ~9 s
    # before failing, and the SLURM executor plugin runs it whenever Snakemake starts (its settings'
    # defaults), so every later snakemake call on this machine, tests and rehearsal included, would wait
    if [ "$WROTE_CONF" = 1 ]; then rm -f "$CONF_DIR/slurm.conf"; fi
}

controller_up() { command -v scontrol >/dev/null && scontrol ping 2>/dev/null | grep -q "is UP"; }

start_cluster() {
    [ "$(id -u)" = 0 ] || die "starting a cluster needs root (or start one and set SLURM_CI_REUSE=1)"
    if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
        log "installing slurm-wlm and munge (apt-get)"
        DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
    fi
    # munge: a key (the package's postinst normally makes one), then the daemon as its own user
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile /etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    if ! pgrep -u munge -x munged >/dev/null; then
        runuser -u munge -- /usr/sbin/munged
        STARTED+=("munged:/run/munge/munged.pid")
    fi
    munge -n | unmunge >/dev/null || die "munge does not work"

    local mem_mb
    mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
    mkdir -p "$CONF_DIR" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
    if [ -e "$CONF_DIR/slurm.conf" ] && ! grep -q "prm-lessons CI" "$CONF_DIR/slurm.conf"; then
        die "$CONF_DIR/slurm.conf exists and was not written by this script; not touching it"
    fi
    # No accounting daemon: the plugin polls with squeue, so finished jobs must stay visible (MinJobAge).
    WROTE_CONF=1
    cat > "$CONF_DIR/slurm.conf" <<EOF
# prm-lessons CI single-node cluster (written by .ci/slurm_integration.sh)
ClusterName=prmci
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldTimeout=60
SlurmdTimeout=60
NodeName=$HOST CPUs=2 RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=60 State=UP
EOF
    /usr/sbin/slurmctld -c   # -c: clean start, no state from an earlier run
    STARTED+=("slurmctld:/run/slurmctld.pid")
    /usr/sbin/slurmd
    STARTED+=("slurmd:/run/slurmd.pid")
    for _ in $(seq 1 60); do
        if sinfo -h -n "$HOST" -o '%T' 2>/dev/null | grep -qE '^(idle|mixed)'; then break; fi
        scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
        sleep 1
    done
    sinfo -h -n "$HOST" -o '%T' | grep -qE '^(idle|mixed)' || { sinfo; tail -20 /var/log/slurm/slurmctld.log; die "node not idle"; }
}

if controller_up; then
    log "a SLURM controller is already up: using it"
elif [ "$REUSE" = 1 ]; then
    die "SLURM_CI_REUSE=1 but no controller answers scontrol ping"
else
    trap stop_started EXIT
    start_cluster
    log "cluster up: $(sinfo -h -o '%P %D %T %c CPUs')"
fi
PARTITION="$(sinfo -h -o '%P' | head -1 | tr -d '*')"

log "workdir $WORK"
mkdir -p "$WORK"
# tiny base model + two training sets (hard, soft) + a config for them (the embedded one with these
# variants); built with the test helpers (tests/support/_prm_tiny.py), no downloads
PYTHONPATH="$ROOT/src:$ROOT/tests:$ROOT/tests/support" "$PY" - "$WORK" "$ROOT" <<'EOF'
import sys
from pathlib import Path

import yaml

from _prm_tiny import signal_rows, tiny_base, write_trainset

work, root = Path(sys.argv[1]), Path(sys.argv[2])
tiny_base(work / "tiny_base", with_step_token=False)
write_trainset(work / "results/trainsets/ci_hard.parquet", signal_rows(16, seed=1))
write_trainset(work / "results/trainsets/ci_soft.parquet", signal_rows(16, seed=2, soft=True))
cfg = yaml.safe_load((root / "config/config.yaml").read_text())
cfg["run"] = {"name": "slurm-ci", "label": "SLURM integration test: tiny random model"}
cfg["models"]["tiny"] = {"source": "local", "id": str(work / "tiny_base"), "dtype": "float32"}
cfg["trainsets"] = {"variants": {"ci_hard": {"source": "mc", "label_type": "hard", "threshold": 0.0},
                                 "ci_soft": {"source": "mc", "label_type": "soft"}},
                    "mc_threshold_sweep": []}
cfg["search"]["prms"] = ["ci_hard"]  # the embedded default's search PRMs are not variants of this config
cfg["training"].update({"base": "tiny", "mode": "lora", "resamples": 0, "epochs": 2, "batch_size": 4, "learning_rate": 3e-3,
                        "max_length": 256, "save_steps": 2, "threads": 1, "mem_mb": 1000, "runtime": 10})
(work / "ci_config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
EOF

TARGETS=(results/prms/ci_hard/train_metrics.json results/prms/ci_soft/train_metrics.json)
log "snakemake --profile slurm (from the repo root) -> ${TARGETS[*]}"
set +e
(
    cd "$ROOT"
    "$SNAKEMAKE" --profile slurm --directory "$WORK" \
        --configfile "$WORK/ci_config.yaml" --replace-workflow-config \
        --allowed-rules tokenize_trainset train_prm \
        --default-resources "slurm_account=prmci" "slurm_partition=$PARTITION" runtime=10 mem_mb=1000 \
        --jobs 2 --retries 0 --latency-wait 5 \
        --slurm-status-command squeue --slurm-init-seconds-before-status-checks 2 \
        --slurm-keep-successful-logs \
        "${TARGETS[@]}"
) > "$WORK/snakemake.log" 2>&1
rc=$?
set -e
if [ $rc != 0 ]; then
    tail -60 "$WORK/snakemake.log"
    for f in "$WORK"/logs/training/*.log; do [ -f "$f" ] && { echo "== $f"; tail -30 "$f"; }; done
    die "snakemake exited $rc"
fi

log "checking outputs and job ids"
PYTHONPATH="$ROOT/src" "$PY" - "$WORK" "$HOST" <<'EOF'
import json
import re
import subprocess
import sys
from pathlib import Path

work, host = Path(sys.argv[1]), sys.argv[2]
text = (work / "snakemake.log").read_text()
job_ids = sorted(set(re.findall(r"SLURM jobid (\d+)", text)), key=int)
assert len(job_ids) >= 2, f"expected 2 sbatch submissions in the Snakemake log, found {job_ids}"
states = {}
for jid in job_ids:
    out = subprocess.run(["scontrol", "show", "job", jid], capture_output=True, text=True).stdout
    state = re.search(r"JobState=(\S+)", out)
    node = re.search(r"\bNodeList=(\S+)", out)
    states[jid] = (state.group(1) if state else "UNKNOWN", node.group(1) if node else "")
    assert states[jid][0] == "COMPLETED", f"job {jid}: {states[jid]}"
    assert states[jid][1] == host, f"job {jid} ran on {states[jid][1]}, not {host}"

from prm_lessons.scoring.batch import score_responses
from prm_lessons.scoring.load import load_adapter

seen = {}
for variant in ("ci_hard", "ci_soft"):
    d = work / "results/prms" / variant
    m = json.loads((d / "train_metrics.json").read_text())
    assert m["loss_history"] and m["train_tokens"] > 0, variant
    jid = m["hardware"].get("slurm_job_id")
    assert jid in job_ids, f"{variant}: trained outside the submitted jobs (SLURM_JOB_ID={jid}, jobs {job_ids})"
    seen[variant] = jid
    adapter = load_adapter({"adapter": "trained", "path": str(d), "max_length": None, "params": {}})
    scores = score_responses(adapter, ["What is 1 + 2?"], [["1 + 2 = 3.", "The answer is 3."]])
    assert len(scores[0]) == 2 and all(0 <= s <= 1 for s in scores[0]), scores
assert len(set(seen.values())) == 2, f"both variants in one job? {seen}"
summary = {"job_ids": job_ids, "states": states, "trained_in_job": seen, "workdir": str(work)}
(work / "summary.json").write_text(json.dumps(summary, indent=2))
print(json.dumps(summary))
EOF
log "OK: jobs went through sbatch and trained the PRMs ($WORK/summary.json)"
