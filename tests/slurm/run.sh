#!/usr/bin/env bash
# A real Slurm for `ordo sweep slurm`: munged, slurmctld and slurmd on this one node (Debian's
# slurm-wlm, configured in a temporary directory), a quick grid submitted as a job array, merged,
# and the merged report checked against `--jobs 1` and the one-process command. Every daemon it
# starts is stopped on exit, failure included; every wait has a timeout.
# Usage: tests/slurm/run.sh ORDO_BINARY [SOURCE_DIR]
set -euo pipefail

ordo=$(readlink -f "${1:?usage: tests/slurm/run.sh ORDO_BINARY [SOURCE_DIR]}")
src=$(readlink -f "${2:-$(dirname "$0")/../..}")
deadline=${ORDO_SLURM_TIMEOUT:-240}  # seconds for the array to finish
for tool in munged mungekey slurmctld slurmd sbatch scontrol; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$tool" >/dev/null || { echo "slurm test: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ordo-slurm-XXXXXX")
pids=()
cleanup() {
  local rc=$?
  # Jobs first, while the controller still runs: a task left behind would outlive its slurmd.
  if [[ -n ${SLURM_CONF:-} ]]; then timeout 10 scancel --partition ordo 2>/dev/null || true; fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [[ $rc -ne 0 ]]; then
    echo "slurm test failed (exit $rc); daemon logs:" >&2
    tail -n 20 "$tmp"/*.log >&2 2>/dev/null || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT INT TERM

# Ports of our own, so a Slurm already on this machine is not disturbed.
port=$((20000 + RANDOM % 20000))
host=$(hostname -s)
user=$(id -un)
cpus=$(nproc)
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/munge"
chmod 700 "$tmp/munge"

mungekey --create --keyfile="$tmp/munge/munge.key" --force 2>/dev/null ||
  dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.sock" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" --seed-file="$tmp/munge/seed" \
  >"$tmp/munged.out" 2>&1 &
pids+=($!)

cat >"$tmp/slurm.conf" <<CONF
ClusterName=ordotest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus State=UNKNOWN
PartitionName=ordo Nodes=$host Default=YES MaxTime=30 State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf

wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local limit=$1 what=$2
  shift 2
  local end=$((SECONDS + limit))
  while ((SECONDS < end)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  echo "slurm test: timed out after ${limit}s waiting for $what" >&2
  return 1
}

wait_for 10 munged test -S "$tmp/munge/munge.sock"
slurmctld -D -i -f "$tmp/slurm.conf" >"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
# Each Slurm client call is bounded: one that cannot reach its daemon retries for a long time.
wait_for 30 slurmctld timeout 10 scontrol ping
slurmd -D -f "$tmp/slurm.conf" -N "$host" >"$tmp/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { timeout 10 sinfo -h -N -o '%T' | grep -Eq '^(idle|mixed|allocated)'; }
wait_for 60 "node $host to be idle" node_idle

# The grid: ppl of the bundled model, 2 settings x 2 lengths = 4 rows.
text="$src/tests/data/text/stories-sampled.txt"
ppl_args=(--text "$text" --ctx-lengths "256,512" --scaling "none,yarn")
cd "$tmp"
"$ordo" ppl "${ppl_args[@]}" --json one.json >one.txt 2>/dev/null
# Each row in 2 shards (8 cells), in a directory with a space: sbatch must read the quoted --output.
"$ordo" sweep plan --shards 2 "a grid" ppl "${ppl_args[@]}"
timeout 120 "$ordo" sweep slurm "a grid" --max-parallel 2 -- --time=5 --cpus-per-task=1
ordo_done() { "$ordo" sweep status "a grid" | grep -q '^missing 0$' && ! timeout 10 squeue -h | grep -q .; }
wait_for "$deadline" "the job array" ordo_done
"$ordo" sweep status "a grid"
"$ordo" sweep merge "a grid" --json slurm.json >slurm.txt
compgen -G "a grid/logs/slurm-*_7.out" >/dev/null || { echo "slurm test: no task log in 'a grid/logs'" >&2; exit 1; }

"$ordo" sweep plan local ppl "${ppl_args[@]}"
"$ordo" sweep run local --jobs 1 2>/dev/null
"$ordo" sweep merge local --json local.json >local.txt

cmp one.json slurm.json && cmp one.txt slurm.txt && cmp local.json slurm.json && cmp local.txt slurm.txt
grep -q '"ppl"' slurm.json
echo "slurm test: ok (8 shard cells as a job array on $host; merged report equals --jobs 1 and one process)"
