#!/usr/bin/env bash
# A one-node Slurm cluster on this machine for the `fwdoctor fleet collect --slurm` tests
# (tests/test_fleet_collect_slurm.py): munged, slurmctld and slurmd on localhost, one
# partition holding this host. Idempotent; runs as root on a fresh Debian 12 machine with
# no systemd (the daemons are started directly). No cgroups are needed: processes are
# tracked through /proc (proctrack/linuxproc) and tasks are not confined (task/none).
#
# A slurm.conf this script did not write is never replaced: on a machine that already
# belongs to a real cluster it only reports what sinfo says.
set -euo pipefail

CONF_DIR=/etc/slurm
CONF="$CONF_DIR/slurm.conf"
MARK="# written by fwdoctor .ci/setup-slurm.sh"
LOG_DIR=/var/log/slurm
SPOOL_CTLD=/var/spool/slurmctld
SPOOL_D=/var/spool/slurmd
WAIT_S=60

need=()
command -v slurmctld >/dev/null 2>&1 || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || need+=(slurmd)
command -v srun >/dev/null 2>&1 || need+=(slurm-client)
command -v munged >/dev/null 2>&1 || need+=(munge)
# `fleet collect --hosts` is tested through a real sshd and pdsh (tests/test_fleet_collect_ssh.py
# starts its own sshd on 127.0.0.1; nothing is started here for it).
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v pdsh >/dev/null 2>&1 || need+=(pdsh)
if [ "${#need[@]}" -gt 0 ]; then
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

node="$(hostname -s)"

node_state() {
    # "idle", "alloc", "down*", ... for this node; empty when the controller does not answer.
    timeout 10 sinfo -h -N -n "$node" -o '%t' 2>/dev/null | head -n 1 || true
}

show_logs() {
    for log in "$LOG_DIR/slurmctld.log" "$LOG_DIR/slurmd.log" /var/log/munge/munged.log; do
        [ -f "$log" ] || continue
        echo "--- last lines of $log" >&2
        tail -n 30 "$log" >&2 || true
    done
}

# ------------------------------------------------------------------ munge (authentication)
if [ ! -s /etc/munge/munge.key ]; then
    echo "creating a munge key"
    install -d -o munge -g munge -m 0700 /etc/munge
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile=/etc/munge/munge.key --force
    else
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
    echo "starting munged"
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 10); do
        munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 1
    done
    if ! munge -n </dev/null | unmunge >/dev/null; then
        echo "munged does not answer" >&2
        show_logs
        exit 1
    fi
fi
echo "munge up"

# ------------------------------------------------------------------ slurm.conf
if [ -f "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then
    echo "$CONF was not written by this script: left as it is"
else
    # slurmd -C prints this machine's node line (CPUs, sockets, cores, RealMemory) as slurmd
    # itself will measure it at registration, so the node is never drained for a mismatch.
    node_line="$(slurmd -C | head -n 1)"
    case "$node_line" in
        NodeName=*) ;;
        *) echo "slurmd -C printed no node line: $node_line" >&2; exit 1 ;;
    esac
    install -d -m 0755 "$CONF_DIR" "$LOG_DIR"
    install -d -o slurm -g slurm -m 0755 "$SPOOL_CTLD"
    install -d -m 0755 "$SPOOL_D"
    chown slurm:slurm "$LOG_DIR"
    new="$(mktemp "$CONF_DIR/.slurm.conf.XXXXXX")"
    cat >"$new" <<EOF
$MARK
# One node (this host), one partition; no cgroups, no accounting database.
ClusterName=fwdoctor-ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=$SPOOL_D
StateSaveLocation=$SPOOL_CTLD
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=60
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    chmod 0644 "$new"
    if [ -f "$CONF" ] && cmp -s "$new" "$CONF"; then
        rm -f "$new"
    else
        mv -f "$new" "$CONF"
        echo "wrote $CONF for node $node"
        # A running controller reads the new file; a stopped one reads it when started.
        if pidof slurmctld >/dev/null 2>&1; then
            timeout 20 scontrol reconfigure || true
        fi
    fi
fi

# ------------------------------------------------------------------ daemons
if ! pidof slurmctld >/dev/null 2>&1; then
    echo "starting slurmctld"
    slurmctld || { show_logs; exit 1; }
fi
if ! pidof slurmd >/dev/null 2>&1; then
    echo "starting slurmd"
    slurmd || { show_logs; exit 1; }
fi

state=""
for _ in $(seq "$WAIT_S"); do
    state="$(node_state)"
    case "$state" in
        idle|alloc|mix|comp) break ;;
        down*|drain*|drng*)
            # Left down by an earlier run (a restart, an unexpected reboot): bring it back.
            timeout 10 scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 1
done
case "$state" in
    idle|alloc|mix|comp)
        # A state restored from the spool can say idle before slurmd has registered: a
        # real one-task job proves the controller, slurmd and munge work together.
        if ! timeout 60 srun -N1 -n1 --time=1 -- true; then
            echo "node $node is $state but a one-task job (srun true) did not run" >&2
            show_logs
            exit 1
        fi
        echo "slurm up: node $node is $state; srun ran a job" ;;
    *)
        echo "node $node did not become idle within ${WAIT_S}s (state: ${state:-no answer from slurmctld})" >&2
        timeout 10 scontrol show node "$node" >&2 || true
        show_logs
        exit 1 ;;
esac
