#!/usr/bin/env bash
# Set up clusterproof in this checkout.
#
#   bash scripts/setup.sh          .venv with requirements.txt and, as root on
#                                  Debian/Ubuntu, the benchmarks the distribution
#                                  ships (Open MPI, hpcc), so that they run for real
#   bash scripts/setup.sh --test   also the packages the tests need (Slurm sandbox)
#
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Slurm (+ slurmdbd on MariaDB for sacct), munge, Open MPI with PMIx, hpcc.
# Slurm's mpi/pmix plugin (slurm-wlm-basic-plugins) dlopens the unversioned
# libpmix.so, which only libpmix-dev ships.
TEST_PACKAGES=(
    slurmctld slurmd slurm-client slurmdbd slurm-wlm-basic-plugins
    slurm-wlm-mysql-plugin munge mariadb-server
    openmpi-bin libopenmpi-dev libpmix-dev gcc hpcc openssl curl
    chromium
)
# systemd-analyze verify checks the schedule templates (scripts/schedules).
TEST_PACKAGES+=(systemd)

# Benchmarks Debian/Ubuntu ship: the suite runs them for real on this machine;
# curl, with which every job asks the metadata service for its VM size
# (checks/common/vm_size.py).
RUN_PACKAGES=(openmpi-bin hpcc curl)

want_tests=0
case "${1:-}" in
    --test) want_tests=1 ;;
    '') ;;
    *) echo "usage: bash scripts/setup.sh [--test]" >&2; exit 2 ;;
esac

say() { echo "setup: $*"; }

missing_packages() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' \
            || echo "$pkg"
    done
}

apt_install() {
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
        echo "setup: needs root and apt-get to install: $*" >&2
        echo "setup: run as root, or install them yourself: apt-get install -y $*" >&2
        exit 2
    fi
    say "apt-get install $*"
    # Install only: keep the distribution's services (munge, MariaDB, Slurm) from
    # starting; the sandbox runs its own copies under its state directory.
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && added_policy=1
    fi
    local status=0 log
    log=$(mktemp)
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "$@"; } >"$log" 2>&1 || status=$?
    if [ "$added_policy" -eq 1 ]; then rm -f "$policy"; fi
    if [ "$status" -ne 0 ]; then
        tail -n 30 "$log" >&2
        echo "setup: apt-get failed ($status)" >&2
        rm -f "$log"
        exit "$status"
    fi
    rm -f "$log"
}

if [ "$want_tests" -eq 1 ]; then
    mapfile -t missing < <(missing_packages "${TEST_PACKAGES[@]}")
    # Node.js runs Kusto.Language in the tests. A Node.js from elsewhere
    # (NodeSource) brings its own npm, which Debian's npm package conflicts with.
    command -v node >/dev/null || missing+=(nodejs)
    command -v npm >/dev/null || missing+=(npm)
    if [ "${#missing[@]}" -eq 0 ]; then
        say "test packages already installed"
    else
        apt_install "${missing[@]}"
    fi
elif command -v dpkg-query >/dev/null; then
    mapfile -t missing < <(missing_packages "${RUN_PACKAGES[@]}")
    if [ "${#missing[@]}" -eq 0 ]; then
        say "benchmark packages already installed"
    elif [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        apt_install "${missing[@]}"
    else
        say "not root: checks needing ${missing[*]} will be skipped" \
            "(apt-get install ${missing[*]} to run them)"
    fi
fi

if [ ! -x .venv/bin/python ]; then
    say "creating .venv"
    if ! python3 -m venv .venv >/dev/null 2>&1; then
        # Debian splits venv (ensurepip) out of python3.
        rm -rf .venv
        apt_install python3-venv
        python3 -m venv .venv
    fi
fi

# Reinstall only when requirements.txt changed since the last successful install.
stamp=.venv/.requirements.sha256
wanted=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    say ".venv already has requirements.txt"
else
    say "installing requirements.txt into .venv"
    if ! .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt; then
        echo "setup: pip could not install requirements.txt into .venv (its error is above);" \
            "check the network or the package index (PIP_INDEX_URL, a proxy), then run" \
            "bash scripts/setup.sh again" >&2
        exit 1
    fi
    echo "$wanted" > "$stamp"
fi
# Every command imports the checkout's own modules: compiled here, as pip compiles
# what it installs, so that no command compiles them again where Python does not
# write __pycache__ (a read-only shared checkout, PYTHONDONTWRITEBYTECODE); an
# edited module is compiled again as usual.
.venv/bin/python -m compileall -q scripts config checks >/dev/null
# The shipped KQL queries translated to DuckDB's SQL for the same reason (~1 s each,
# in every first command on a new store otherwise).
.venv/bin/python -m scripts.query.translate_shipped >/dev/null
if [ "$want_tests" -eq 1 ]; then
    # Kusto.Language (Microsoft's KQL parser), pinned by tests/support/kusto/package-lock.json,
    # validates bicep/queries in the tests.
    if [ "$(cat tests/support/kusto/node_modules/.lock-installed 2>/dev/null)" = "$(sha256sum tests/support/kusto/package-lock.json | cut -d' ' -f1)" ]; then
        say "tests/support/kusto already has its npm packages"
    else
        say "npm ci in tests/support/kusto"
        # npm's cache (and its logs) in a directory of its own, removed after,
        # not in ~/.npm.
        npm_cache=$(mktemp -d)
        npm_status=0
        (cd tests/support/kusto && npm ci --cache "$npm_cache" --no-update-notifier \
            --no-audit --no-fund --loglevel=error >/dev/null) || npm_status=$?
        rm -rf "$npm_cache"
        [ "$npm_status" -eq 0 ] || exit "$npm_status"
        sha256sum tests/support/kusto/package-lock.json | cut -d' ' -f1 > tests/support/kusto/node_modules/.lock-installed
    fi
fi
say "done; activate with: source .venv/bin/activate"
