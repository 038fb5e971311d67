#!/bin/sh
# clusterproof node probe, run by every job on each of its nodes before and
# after the benchmark (checks/common/node_probe.py puts it into the job
# script, launch.on_every_node runs it on every node). It only reads: the
# node's VM size from the Azure metadata service (before the run), IB port
# counters and states from sysfs, the GPUs' state (nvidia-smi -q -x), the
# log lines of link flaps and XIDs since the first sample, and, once per node
# and session, the node's fingerprint. Nothing here may fail the job: every
# source that is missing is written down as not available, and the script
# always exits 0.
#
#   node_probe.sh PHASE OUTDIR SYSFS_ROOT FINGERPRINT_DIR [VM_SIZE_URL [HEALTH]]
#
# PHASE is before or after; SYSFS_ROOT may hold %n, the node's name (the
# sandbox's nodes share one /sys). VM_SIZE_URL (before only; '' = do not ask)
# may hold %n too, for stand-ins that serve several fake nodes from one host;
# the node asks with the 'Metadata: true' header IMDS requires and a 2 s
# limit (learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
# HEALTH 'no-health' leaves the health sources out. It writes one file,
# OUTDIR/PHASE.NODE.txt, sections headed by '##clusterproof-health NAME'
# (parsed by checks/health/dump.py).

phase=$1
out=$2
sysfs_root=${3:-/sys}
fingerprints=$4
vm_size_url=$5
health=${6:-health}
node=${SLURMD_NODENAME:-$(hostname -s 2>/dev/null || hostname)}
sysfs=$(printf '%s' "$sysfs_root" | sed "s|%n|$node|g")
ib=$sysfs/class/infiniband
mark='##clusterproof-health'
mkdir -p "$out" 2>/dev/null

section() { echo "$mark $1"; }
missing() { echo "$mark not-available $1: $2"; }

ib_sample() {
    section infiniband
    if [ ! -d "$ib" ]; then
        missing infiniband "no $ib"
        return
    fi
    # path:value, one a line (grep -H); unreadable files are left out
    grep -H . "$ib"/*/fw_ver "$ib"/*/ports/*/state "$ib"/*/ports/*/rate \
        "$ib"/*/ports/*/link_layer "$ib"/*/ports/*/counters/* \
        "$ib"/*/ports/*/hw_counters/* 2>/dev/null | sed "s|^$ib/||"
}

gpu_sample() {
    section nvidia-smi
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        missing gpu 'nvidia-smi not found'
        return
    fi
    xml=$(nvidia-smi -q -x 2>/dev/null)
    status=$?
    if [ $status -ne 0 ]; then
        missing gpu "nvidia-smi -q -x exit $status: $(printf '%s' "$xml" | head -n 1)"
        return
    fi
    printf '%s\n' "$xml"
    section nvlink
    nvidia-smi nvlink -s 2>/dev/null
    section nvlink-errors
    nvidia-smi nvlink -e 2>/dev/null
}

# Link flaps (systemd-networkd's 'ibN: lost carrier', as AzHC counts them)
# and XIDs since the first sample; the journal is readable where it shows
# at least one kernel line.
log_sample() {
    section log
    since=$(sed -n "/^$mark time/{n;p;q;}" "$out/before.$node.txt" 2>/dev/null)
    if ! command -v journalctl >/dev/null 2>&1; then
        missing log 'journalctl not found'
        return
    fi
    if [ -z "$(journalctl -q -k -b -n 1 --no-pager 2>/dev/null)" ]; then
        missing log 'the kernel log is not readable here (journalctl -k shows nothing)'
        return
    fi
    journalctl -q --no-pager -o short --since "@${since:-0}" 2>/dev/null |
        grep -E 'lost carrier|NVRM: Xid' | tail -n 1000
}

fingerprint() {
    echo "kernel_version=$(uname -r 2>/dev/null)"
    if [ -r /opt/azurehpc/component_versions.txt ]; then
        echo "component_versions=$(tr -d '\n' < /opt/azurehpc/component_versions.txt)"
    fi
    if [ -r /etc/os-release ]; then
        echo "os_release=$(. /etc/os-release && echo "$PRETTY_NAME")"
    fi
    command -v ofed_info >/dev/null 2>&1 && echo "ofed_info=$(ofed_info -s 2>/dev/null | head -n 1)"
    [ -n "$HPCX_DIR" ] && echo "hpcx_dir=$HPCX_DIR"
    command -v mpirun >/dev/null 2>&1 && echo "mpirun=$(mpirun --version 2>/dev/null | head -n 1)"
}

# Hyper-V's KVP pool 3 (the keys the host gives the VM, PhysicalHostName
# among them): copied as it is, records of fixed size (checks/health/
# fingerprint.py reads them). CLUSTERPROOF_KVP_POOL moves it, %n standing
# for the node's name (scripts/guest_health/identity.py reads the same).
kvp_copy() {
    pool=$(printf '%s' "${CLUSTERPROOF_KVP_POOL:-/var/lib/hyperv/.kvp_pool_3}" \
        | sed "s/%n/$node/g")
    [ -r "$pool" ] && cp "$pool" "$out/kvp_pool_3.$node" 2>/dev/null
}

# What the metadata service says this VM is, as it answered (no answer
# leaves the section empty); a node without curl says so instead
# (checks/common/vm_size.py reads both).
vm_size_sample() {
    section vm-size
    if ! command -v curl >/dev/null 2>&1; then
        echo "no HTTP client: curl is not installed on $node"
        return
    fi
    url=$(printf '%s' "$vm_size_url" | sed "s|%n|$node|g")
    curl -s -f -m 2 -H 'Metadata: true' --noproxy '*' "$url" 2>/dev/null
    echo
}

fingerprint_sample() {
    section fingerprint
    cached=$fingerprints/$node.txt
    if [ -n "$fingerprints" ] && [ -s "$cached" ]; then
        cat "$cached"
        return
    fi
    if [ -n "$fingerprints" ] && mkdir -p "$fingerprints" 2>/dev/null; then
        fingerprint > "$cached.$$" 2>/dev/null && mv -f "$cached.$$" "$cached"
        cat "$cached" 2>/dev/null
    else
        fingerprint 2>/dev/null
    fi
}

{
    section time
    date +%s
    if [ "$phase" = before ] && [ -n "$vm_size_url" ]; then
        vm_size_sample
    fi
    if [ "$health" != no-health ]; then
        ib_sample
        gpu_sample
        if [ "$phase" = after ]; then
            log_sample
        else
            fingerprint_sample
            kvp_copy
        fi
    fi
} > "$out/$phase.$node.txt.tmp" 2>/dev/null
mv -f "$out/$phase.$node.txt.tmp" "$out/$phase.$node.txt" 2>/dev/null
exit 0
