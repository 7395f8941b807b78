#!/usr/bin/env bash
# Start a one-node Slurm cluster on this machine, as root: munged, slurmctld, slurmd, with one
# partition "knee" holding this host. For the tests and for trying profiles/slurm; a real
# cluster needs none of this. Installs slurm-wlm and munge with apt if missing. Idempotent.
# No accounting storage: use the executor's squeue status mode (profiles/slurm does).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get install -y -q slurm-wlm munge >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null && apt-get install -y -q slurm-wlm munge >/dev/null; }
fi
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
conf=$(cat <<CONF
ClusterName=knee
SlurmctldHost=$host
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MinJobAge=600
KillWait=30
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=knee Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
)
if [[ ! -f /etc/slurm/slurm.conf ]] || [[ "$(cat /etc/slurm/slurm.conf)" != "$conf" ]]; then
    printf '%s\n' "$conf" > /etc/slurm/slurm.conf
    for pidfile in /run/slurmctld.pid /run/slurmd.pid; do # by the id each recorded, not by name
        pid=$(cat "$pidfile" 2>/dev/null || true)
        [[ "$pid" =~ ^[0-9]+$ ]] && kill "$pid" 2>/dev/null || continue # none, or gone already
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    done
    rm -f /run/slurmctld.pid /run/slurmd.pid
fi
if [[ ! -s /etc/munge/munge.key ]]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
        sinfo -N -o '%N %P %c %m %T'
        exit 0
    fi
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    sleep 1
done
echo "slurm-up: the node did not become idle; see /var/log/slurm/" >&2
exit 1
