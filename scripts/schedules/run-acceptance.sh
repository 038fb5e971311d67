#!/bin/bash
# Scheduled `clusterproof acceptance`: what cron, scrontab and the systemd
# units call. One run at a time (a lock under $CLUSTERPROOF_HOME: a run that
# finds the previous one still going exits 75 and says so), output appended
# to $CLUSTERPROOF_HOME/logs/acceptance.log, rotated when it passes
# CLUSTERPROOF_LOG_MAX_KB (default 10240), keeping CLUSTERPROOF_LOG_KEEP old
# logs (default 14). Exit status: acceptance's own (0 good, 1 findings,
# 2 broken run), or 75 when skipped.
#
# Settings: $CLUSTERPROOF_HOME/acceptance.env is sourced when present (e.g.
# CLUSTERPROOF_AZURE_PARTITIONS, CLUSTERPROOF_CLUSTER, and
# CLUSTERPROOF_ACCEPTANCE_ARGS="--drain --retry-failed 1"), then
# $CLUSTERPROOF_HOME/azure.env (written by `clusterproof deploy`) so that
# results are shipped. Arguments given here are added after those.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export CLUSTERPROOF_HOME=${CLUSTERPROOF_HOME:-$HOME/.clusterproof}
logs=$CLUSTERPROOF_HOME/logs
log=$logs/acceptance.log
mkdir -p "$logs"

for settings in "$CLUSTERPROOF_HOME/acceptance.env" "$CLUSTERPROOF_HOME/azure.env"; do
    # shellcheck disable=SC1090
    [ -r "$settings" ] && . "$settings"
done

rotate() {
    local max_kb=${CLUSTERPROOF_LOG_MAX_KB:-10240} keep=${CLUSTERPROOF_LOG_KEEP:-14} i
    [ -f "$log" ] || return 0
    [ "$(du -k "$log" | cut -f1)" -ge "$max_kb" ] || return 0
    rm -f "$log.$keep"
    for ((i = keep - 1; i >= 1; i--)); do
        [ -f "$log.$i" ] && mv -f "$log.$i" "$log.$((i + 1))"
    done
    mv -f "$log" "$log.1"
}

exec 9>"$CLUSTERPROOF_HOME/acceptance.lock"
if ! flock -n 9; then
    echo "$(date -u +%FT%TZ) clusterproof acceptance: the previous run still holds $CLUSTERPROOF_HOME/acceptance.lock; skipped" | tee -a "$log" >&2
    exit 75
fi
rotate

python=$repo/.venv/bin/python
[ -x "$python" ] || python=python3
read -r -a configured <<< "${CLUSTERPROOF_ACCEPTANCE_ARGS:-}"
{
    echo "=== $(date -u +%FT%TZ) clusterproof acceptance ${configured[*]} $* (on $(hostname))"
    "$python" "$repo/scripts/clusterproof" acceptance "${configured[@]}" "$@"
    status=$?
    echo "=== $(date -u +%FT%TZ) exit $status"
    exit "$status"
} >> "$log" 2>&1
