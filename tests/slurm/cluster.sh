#!/usr/bin/env bash
# cluster.sh - a private single-node Slurm cluster with accounting, for the tests and for trying
# the workflow's Slurm profile (profiles/slurm) on one machine.
#
#   bash tests/slurm/cluster.sh up      install what is missing, start (or keep) the daemons
#   bash tests/slurm/cluster.sh down    cancel every job, wait, stop only the daemons started here
#   bash tests/slurm/cluster.sh env     print the environment a client needs (eval "$(... env)")
#   bash tests/slurm/cluster.sh status  the daemons and the node, one line each
#   bash tests/slurm/cluster.sh stop D  stop one daemon (slurmctld, slurmd, slurmdbd): an outage
#                                       for tests; `up` starts it again
#
# Debian 12 (bookworm) packages of Slurm 22.05 (munge, slurmctld, slurmd, slurm-client, slurmdbd,
# mariadb-server), run as root, no systemd, no cgroups. Everything lives under $MIRAGE_SLURM_DIR:
# configs, munge key and socket, state, logs, pid files, the MariaDB data. Written outside it:
# /etc/slurm/slurm.conf, a symlink to our slurm.conf (Snakemake's Slurm job step strips every
# SLURM_* variable, SLURM_CONF too, before it calls srun inside a job, so srun finds only the
# compiled-in path), and the system user $MIRAGE_SLURM_USER2 (a second user for the QOS limits and
# for background load). `up` is idempotent: packages install only when missing, running daemons
# are kept, and slurmctld/slurmd restart only when slurm.conf changed.
#
# Like a production GPU partition: multifactor priority (age, job size, QOS), sched/backfill with
# bf_* settings, accounting enforced with a QOS that limits each user's running jobs and CPUs,
# and one node that declares $MIRAGE_SLURM_CPUS CPUs (more than the machine has, trusted through
# SlurmdParameters=config_overrides) so that several jobs run at once. Jobs do not run in cgroups
# (proctrack/linuxproc), so a job's memory request is bookkeeping, not a cap.
#
# Settings (environment, defaults in brackets):
#   MIRAGE_SLURM_DIR        [/tmp/mirage-slurm]  base directory
#   MIRAGE_SLURM_CLUSTER    [mirage]     ClusterName
#   MIRAGE_SLURM_PARTITION  [gpu]        the partition (the only one, default)
#   MIRAGE_SLURM_ACCOUNT    [mirage]     the account root and the second user submit under
#   MIRAGE_SLURM_USER2      [mirage-bg]  the second user (created when missing)
#   MIRAGE_SLURM_CPUS       [16]         CPUs the node declares
#   MIRAGE_SLURM_MEM_MB     [64000]      RealMemory the node declares
#   MIRAGE_SLURM_MAX_JOBS_PER_USER [32]  the QOS's running-job limit per user
#   MIRAGE_SLURM_PORT_BASE  [6817]       slurmctld, slurmd, slurmdbd take BASE, +1, +2
#   MIRAGE_SLURM_MYSQL_PORT [13306]
#   MIRAGE_SLURM_TIMEOUT    [90]         seconds to wait for each daemon
set -euo pipefail

BASE=${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm}
CLUSTER=${MIRAGE_SLURM_CLUSTER:-mirage}
PARTITION=${MIRAGE_SLURM_PARTITION:-gpu}
ACCOUNT=${MIRAGE_SLURM_ACCOUNT:-mirage}
USER2=${MIRAGE_SLURM_USER2:-mirage-bg}
CPUS=${MIRAGE_SLURM_CPUS:-16}
MEM_MB=${MIRAGE_SLURM_MEM_MB:-64000}
MAX_JOBS_PER_USER=${MIRAGE_SLURM_MAX_JOBS_PER_USER:-32}
PORT_BASE=${MIRAGE_SLURM_PORT_BASE:-6817}
CTLD_PORT=$PORT_BASE SLURMD_PORT=$((PORT_BASE + 1)) DBD_PORT=$((PORT_BASE + 2))
MYSQL_PORT=${MIRAGE_SLURM_MYSQL_PORT:-13306}
TIMEOUT=${MIRAGE_SLURM_TIMEOUT:-90}
HOST=$(hostname -s)

ETC=$BASE/etc RUN=$BASE/run LOG=$BASE/log STATE=$BASE/state
MUNGE_DIR=$BASE/munge MYSQL_DIR=$BASE/mysql
MUNGE_SOCK=$MUNGE_DIR/munge.socket.2
MYSQL_SOCK=$MYSQL_DIR/mysqld.sock
CONF=$ETC/slurm.conf
export SLURM_CONF=$CONF

T0=$(date +%s.%N)
log() { printf '[cluster.sh %5.1fs] %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$T0" 'BEGIN{print a-b}')" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# running PID: the process exists and is not a zombie (a daemon that exited stays a zombie until
# PID 1 reaps it, and kill -0 succeeds on a zombie)
running() { local st; st=$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null) && [ -n "$st" ] && [ "$st" != Z ]; }
# alive PIDFILE COMM: the pid file names a running process called COMM (never match by name alone)
alive() {
    local pf=$1 comm=$2 pid
    [ -s "$pf" ] || return 1
    pid=$(cat "$pf" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$comm" ] || return 1
    running "$pid"
}
# wait_for CMD...: poll every 0.25 s for up to $TIMEOUT seconds
wait_for() {
    local end=$(($(date +%s) + TIMEOUT))
    until "$@" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.25
    done
}
stop_pidfile() { # PIDFILE COMM
    local pf=$1 comm=$2 pid i
    if ! alive "$pf" "$comm"; then rm -f "$pf"; return 0; fi
    pid=$(cat "$pf")
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then
        log "$comm (pid $pid) ignored SIGTERM for 30 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pf"
    log "$comm (pid $pid) stopped"
}

install_packages() {
    local need=0 b
    for b in munged mungekey slurmctld slurmd sbatch sacct slurmdbd mariadbd mariadb-install-db; do
        command -v "$b" >/dev/null || need=1
    done
    [ $need = 1 ] || return 0
    command -v apt-get >/dev/null || die "Slurm is not installed and there is no apt-get to install it: install munge, slurmctld, slurmd, slurm-client, slurmdbd and mariadb-server"
    log "installing munge slurmctld slurmd slurm-client slurmdbd mariadb-server (apt-get, log in /tmp/mirage-slurm-apt.log)"
    # keep the packages' own init scripts from starting daemons with the system's config
    local policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && policy=1
    fi
    local pkgs=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server) ok=1
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${pkgs[@]}" >/tmp/mirage-slurm-apt.log 2>&1; then
        log "apt-get install failed; apt-get update and retry"
        apt-get update -q >>/tmp/mirage-slurm-apt.log 2>&1 || true
        apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>/tmp/mirage-slurm-apt.log 2>&1 || ok=0
    fi
    [ $policy = 1 ] && rm -f /usr/sbin/policy-rc.d
    [ $ok = 1 ] || die "apt-get install failed, see /tmp/mirage-slurm-apt.log"
    log "packages installed"
}

write_slurm_conf() { # prints 1 when slurm.conf changed
    local version new
    version=$(slurmctld -V | awk '{print $2}')
    new=$(cat <<EOF
# Written by tests/slurm/cluster.sh (Slurm $version): a one-node test cluster shaped like a
# production GPU partition. Do not edit: cluster.sh rewrites it.
ClusterName=$CLUSTER
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# no cgroups here: plain process tracking, no task confinement
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=256
# trust the node line below although it declares more than the hardware has
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
# multifactor priority, weights in the range production GPU partitions use
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityMaxAge=7-0
PriorityWeightJobSize=100
PriorityWeightQOS=1000
PriorityWeightFairshare=0
PriorityFavorSmall=NO
# backfill; bf_interval=5 (not the 30 s default) so that --begin jobs start within seconds
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=5,bf_window=2880,bf_resolution=60,bf_max_job_test=1000,bf_continue,default_queue_depth=100
# accounting (sacct) through slurmdbd; associations, limits and QOS enforced
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$HOST
AccountingStoragePort=$DBD_PORT
# the munge socket for slurmctld->slurmdbd is taken from here, not from AuthInfo
AccountingStoragePass=$MUNGE_SOCK
AccountingStorageEnforce=associations,limits,qos
# sacct shows each job's comment (Snakemake writes the rule and wildcards there)
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
InactiveLimit=0
KillWait=5
# finished jobs stay visible to squeue/scontrol for 5 minutes
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=60
Waittime=0
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=2-00:00:00 State=UP
EOF
    )
    if [ -f "$CONF" ] && [ "$(cat "$CONF")" = "$new" ]; then echo 0; return; fi
    printf '%s\n' "$new" >"$CONF.tmp" && mv "$CONF.tmp" "$CONF"
    echo 1
}

write_slurmdbd_conf() {
    cat >"$ETC/slurmdbd.conf.tmp" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=$HOST
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$RUN/slurmdbd.pid
LogFile=$LOG/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$ETC/slurmdbd.conf.tmp" # slurmdbd insists on 0600, next to slurm.conf
    mv "$ETC/slurmdbd.conf.tmp" "$ETC/slurmdbd.conf"
}

link_etc() {
    mkdir -p /etc/slurm
    if [ -L /etc/slurm/slurm.conf ] || [ ! -e /etc/slurm/slurm.conf ]; then
        ln -sfn "$CONF" /etc/slurm/slurm.conf
    elif [ "$(readlink -f /etc/slurm/slurm.conf)" != "$CONF" ]; then
        local bak
        bak=/etc/slurm/slurm.conf.mirage-bak.$(date +%s)
        log "moving the existing /etc/slurm/slurm.conf to $bak"
        mv /etc/slurm/slurm.conf "$bak" && ln -sfn "$CONF" /etc/slurm/slurm.conf
    fi
}

start_munge() {
    if [ ! -s "$MUNGE_DIR/munge.key" ]; then
        mungekey --create --keyfile="$MUNGE_DIR/munge.key" 2>/dev/null ||
            dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
        chmod 400 "$MUNGE_DIR/munge.key"
    fi
    alive "$RUN/munged.pid" munged && return 0
    rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
    munged --key-file="$MUNGE_DIR/munge.key" --socket="$MUNGE_SOCK" --pid-file="$RUN/munged.pid" \
        --log-file="$LOG/munged.log" --seed-file="$MUNGE_DIR/munged.seed"
    wait_for sh -c "munge -S '$MUNGE_SOCK' -n | unmunge -S '$MUNGE_SOCK'" ||
        die "munged did not come up, see $LOG/munged.log"
    log "munged started (pid $(cat "$RUN/munged.pid"))"
}

start_mariadb() {
    if ! alive "$RUN/mariadbd.pid" mariadbd; then
        if [ ! -d "$MYSQL_DIR/data/mysql" ]; then
            mkdir -p "$MYSQL_DIR"
            mariadb-install-db --no-defaults --datadir="$MYSQL_DIR/data" --user=root \
                --auth-root-authentication-method=socket --skip-test-db >"$LOG/mariadb-install-db.log" 2>&1 ||
                die "mariadb-install-db failed, see $LOG/mariadb-install-db.log"
        fi
        # --no-defaults: none of /etc/mysql; our socket, port and pid file; TCP on 127.0.0.1 only
        nohup mariadbd --no-defaults --datadir="$MYSQL_DIR/data" --socket="$MYSQL_SOCK" \
            --port="$MYSQL_PORT" --bind-address=127.0.0.1 --pid-file="$RUN/mariadbd.pid" \
            --log-error="$LOG/mariadbd.log" --user=root --skip-log-bin \
            --innodb-buffer-pool-size=128M --innodb-log-file-size=64M \
            --innodb-lock-wait-timeout=900 >/dev/null 2>&1 </dev/null &
        wait_for mariadb-admin --no-defaults --socket="$MYSQL_SOCK" -uroot ping ||
            die "mariadbd did not come up (port $MYSQL_PORT taken? set MIRAGE_SLURM_MYSQL_PORT), see $LOG/mariadbd.log"
        wait_for alive "$RUN/mariadbd.pid" mariadbd || die "mariadbd wrote no pid file, see $LOG/mariadbd.log"
        log "mariadbd started (pid $(cat "$RUN/mariadbd.pid"))"
    fi
    mariadb --no-defaults --socket="$MYSQL_SOCK" -uroot -e "
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
        CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurmpw';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
        FLUSH PRIVILEGES;" || die "could not create the MariaDB user for slurmdbd"
}

start_slurmdbd() {
    alive "$RUN/slurmdbd.pid" slurmdbd && return 0
    slurmdbd # reads slurmdbd.conf next to $SLURM_CONF; daemonizes
    wait_for alive "$RUN/slurmdbd.pid" slurmdbd || die "slurmdbd did not start, see $LOG/slurmdbd.log"
    wait_for sacctmgr -n list cluster || die "slurmdbd does not answer, see $LOG/slurmdbd.log"
    log "slurmdbd started (pid $(cat "$RUN/slurmdbd.pid"))"
}

# the cluster, the account, both users and the QOS; sacctmgr -i answers its own prompts, and
# adding what exists is a no-op (it says so and exits non-zero, hence the || true)
accounting() {
    local q=(sacctmgr -i -Q)
    sacctmgr -nP list cluster format=cluster | grep -qx "$CLUSTER" || "${q[@]}" add cluster "$CLUSTER" >/dev/null
    if ! id "$USER2" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$USER2" ||
            die "could not create the second user $USER2 (set MIRAGE_SLURM_USER2 to an existing user)"
        log "created system user $USER2"
    fi
    "${q[@]}" modify qos normal set MaxJobsPerUser="$MAX_JOBS_PER_USER" MaxTRESPerUser=cpu="$CPUS" \
        MaxSubmitJobsPerUser=1000 Priority=0 >/dev/null || true
    sacctmgr -nP list qos format=name | grep -qx high ||
        "${q[@]}" add qos high Priority=100 MaxJobsPerUser="$MAX_JOBS_PER_USER" >/dev/null || true
    sacctmgr -nP list account format=account | grep -qx "$ACCOUNT" ||
        "${q[@]}" add account "$ACCOUNT" Cluster="$CLUSTER" Description=tests Organization=mirage >/dev/null
    local u
    for u in root "$USER2"; do
        sacctmgr -nP list assoc user="$u" account="$ACCOUNT" format=user | grep -qx "$u" ||
            "${q[@]}" add user "$u" Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null
        "${q[@]}" modify user "$u" set QOS=normal,high DefaultQOS=normal DefaultAccount="$ACCOUNT" >/dev/null || true
    done
}

node_ready() {
    local st
    st=$(sinfo -h -N -n "$HOST" -o %T 2>/dev/null) || return 1
    case "$st" in
    idle | mixed | allocated | completing) return 0 ;;
    down* | drain* | fail* | inval*)
        scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
        return 1 ;;
    *) return 1 ;;
    esac
}

up() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (the daemons run as root; this user is $(id -un))"
    install_packages
    mkdir -p "$ETC" "$RUN" "$LOG" "$STATE/ctld" "$STATE/d" "$MUNGE_DIR"
    chmod 755 "$BASE" "$MUNGE_DIR" # munged requires o+x on its socket directory
    start_munge
    local changed
    changed=$(write_slurm_conf)
    write_slurmdbd_conf
    link_etc
    printf 'export SLURM_CONF=%s\n' "$CONF" >"$BASE/env.sh"
    start_mariadb
    start_slurmdbd
    if [ "$changed" = 1 ] && { alive "$RUN/slurmctld.pid" slurmctld || alive "$RUN/slurmd.pid" slurmd; }; then
        log "slurm.conf changed: restarting slurmctld and slurmd"
        stop_pidfile "$RUN/slurmd.pid" slurmd
        stop_pidfile "$RUN/slurmctld.pid" slurmctld
    fi
    # the account must exist before slurmctld reads the associations
    accounting
    if ! alive "$RUN/slurmctld.pid" slurmctld; then
        slurmctld -f "$CONF"
        wait_for alive "$RUN/slurmctld.pid" slurmctld ||
            die "slurmctld did not start (port $CTLD_PORT taken? set MIRAGE_SLURM_PORT_BASE), see $LOG/slurmctld.log"
        log "slurmctld started (pid $(cat "$RUN/slurmctld.pid"))"
    fi
    if ! alive "$RUN/slurmd.pid" slurmd; then
        slurmd -f "$CONF"
        wait_for alive "$RUN/slurmd.pid" slurmd || die "slurmd did not start, see $LOG/slurmd.log"
        log "slurmd started (pid $(cat "$RUN/slurmd.pid"))"
    fi
    wait_for node_ready || die "node $HOST not ready: $(sinfo -h -N -o '%T %E' 2>&1); see $LOG/slurmctld.log"
    wait_for sh -c "sacctmgr -nP list cluster format=cluster | grep -qx '$CLUSTER'" ||
        die "cluster $CLUSTER never registered with slurmdbd, see $LOG/slurmctld.log"
    wait_for sacct -n -X -S now-1minute || die "sacct does not work, see $LOG/slurmdbd.log"
    log "cluster '$CLUSTER' up: node $HOST ($CPUS CPUs, $(sinfo -h -N -n "$HOST" -o %T)), partition $PARTITION," \
        "account $ACCOUNT, users root and $USER2, Slurm $(slurmctld -V | awk '{print $2}')"
    env_lines
}

down() {
    if alive "$RUN/slurmctld.pid" slurmctld && [ -f "$CONF" ]; then
        local jobs i left
        jobs=$(squeue -h -o %i 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            log "cancelling jobs: $(echo $jobs)"
            # shellcheck disable=SC2086
            scancel --full $jobs 2>/dev/null || true
            for i in $(seq 1 60); do
                [ -z "$(squeue -h -t R,CG,S -o %i 2>/dev/null)" ] && break
                sleep 0.5
            done
        fi
        # slurmstepd outlives slurmd: kill what slurmd itself reports as job processes
        if alive "$RUN/slurmd.pid" slurmd; then
            left=$(scontrol listpids 2>/dev/null | awk 'NR>1 && $1 ~ /^[0-9]+$/ {print $1}' || true)
            # shellcheck disable=SC2086
            [ -z "$left" ] || { log "killing leftover job processes: $(echo $left)"; kill -KILL $left 2>/dev/null || true; }
        fi
    fi
    stop_pidfile "$RUN/slurmd.pid" slurmd
    stop_pidfile "$RUN/slurmctld.pid" slurmctld
    stop_pidfile "$RUN/slurmdbd.pid" slurmdbd
    stop_pidfile "$RUN/mariadbd.pid" mariadbd
    stop_pidfile "$RUN/munged.pid" munged
    if [ -L /etc/slurm/slurm.conf ] && [ "$(readlink /etc/slurm/slurm.conf)" = "$CONF" ]; then
        rm -f /etc/slurm/slurm.conf
    fi
    log "down"
}

env_lines() {
    printf 'export SLURM_CONF=%s\n' "$CONF"
    printf 'export MIRAGE_SLURM_PARTITION=%s MIRAGE_SLURM_ACCOUNT=%s MIRAGE_SLURM_USER2=%s\n' \
        "$PARTITION" "$ACCOUNT" "$USER2"
}

status() {
    local pc
    for pc in munged mariadbd slurmdbd slurmctld slurmd; do
        if alive "$RUN/$pc.pid" "$pc"; then echo "$pc running (pid $(cat "$RUN/$pc.pid"))"; else echo "$pc stopped"; fi
    done
    if alive "$RUN/slurmctld.pid" slurmctld; then sinfo -h -N -o "node %N %T %C" 2>&1 || true; fi
}

case "${1:-}" in
up) up ;;
down) down ;;
env) env_lines ;;
status) status ;;
stop)
    case "${2:-}" in
    slurmctld | slurmd | slurmdbd) stop_pidfile "$RUN/$2.pid" "$2" ;;
    *) echo "usage: bash tests/slurm/cluster.sh stop slurmctld|slurmd|slurmdbd" >&2; exit 2 ;;
    esac ;;
*)
    echo "usage: bash tests/slurm/cluster.sh up|down|env|status|stop DAEMON   (settings: see the head of this file)" >&2
    exit 2 ;;
esac
