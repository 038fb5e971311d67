"""perftest (ib_write_bw, ib_send_bw, ib_send_lat) on every InfiniBand HCA.

One result per HCA (``bw_avg_mlx5_ib0``, ``bw_avg_mlx5_ib1``, ...) so that a
single bad port shows; each stored row holds the metric (``bw_avg``), the
HCA (``device``) and the HCA's line rate as its peak. For each HCA of
extras['ib_hcas'] (in turn, or all at once), the job
starts the server in the background, waits until it listens, runs the
client against it and stops the server; servers left behind are killed when
the job ends (trap). Each client writes ``<hca>.out`` in the stage
directory, each server ``<hca>.server.out``.

- PerftestPair: server on the first node, client on the second one.
- PerftestLoopback: server and client on one node, through the same HCA
  (what azurehpc-health-checks measures, so its floors apply here).

Defaults follow azurehpc-health-checks (customTests/azure_ib_write_bw_gdr.nhc
and azure_ib_write_bw_non_gdr.nhc, commit 0e0a1ac): ``-F --report_gbits``,
warm-up; on GPU partitions GPU memory of GPU i with HCA i, 8 MiB messages,
every HCA at once; elsewhere host memory, 1 MiB messages, ``-q 2 -D 10``,
one HCA after another; each side bound to the NUMA node of its HCA. The
queue pairs, duration and concurrency are part of the reference key, so a
run made otherwise is shown beside the floor, not judged by it. A result counts only if perftest shows it measured what was
asked: GPU buffers when GPU memory was asked for, and "Link type: IB".

The pair script starts its own steps (srun --overlap, scontrol,
$SLURM_JOB_NODELIST): the checks run on Slurm partitions only.
"""
import os
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ

from .. import parsers
from ..common import launch
from ..common.benchmark import BenchmarkTest
from ..common.job_end import GUARD_PREFIX
from ..parsers import perftest as perftest_parser

SCRIPT = 'perftest_hcas.sh'
# ReFrame's names of the Slurm backends (sacct and squeue polling)
GPU_MSG_SIZE = 8 * 2 ** 20
HOST_MSG_SIZE = 2 ** 20
HOST_QPS = 2
HOST_DURATION_S = 10

BW_METRICS = {'bw_avg': 'Gb/s', 'bw_peak': 'Gb/s'}
LAT_METRICS = {'lat_min': 'us', 'lat_typical': 'us', 'lat_avg': 'us',
               'lat_p99': 'us'}

# Shell helpers of the job script. `on NODE HCA CMD...` runs CMD on NODE,
# bound to the NUMA node of HCA where numactl and sysfs say which.
_HELPERS = r'''
numa_exec() {
    local hca=$1; shift
    local node
    node=$(cat "/sys/class/infiniband/$hca/device/numa_node" 2>/dev/null)
    if [ "$NUMA_BIND" = 1 ] && [ "${node:--1}" -ge 0 ] &&
            command -v numactl >/dev/null 2>&1; then
        exec numactl --cpunodebind="$node" --membind="$node" "$@"
    fi
    exec "$@"
}
export -f numa_exec

on() {
    local node=$1; shift
    timeout "$PAIR_TIMEOUT" srun --overlap --mpi=none $STEP_OPTIONS \
        -N1 -n1 -w "$node" bash -c 'numa_exec "$@"' numa_exec "$@"
}

listening() {
    # until the server's port is in state LISTEN (0A) in /proc/net/tcp*;
    # fails as soon as the server process ($2) is gone
    local hex i
    hex=$(printf '%04X' "$1")
    for i in $(seq 1 "$LISTEN_WAIT"); do
        kill -0 "$2" 2>/dev/null || return 1
        srun --overlap --mpi=none -N1 -n1 -w "$server" grep -Eqs \
            ":$hex [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 \
            2>/dev/null && return 0
        sleep 1
    done
    return 1
}

server_pids=()
stop_servers() {
    local pid
    for pid in "${server_pids[@]}"; do kill "$pid" 2>/dev/null; done
    wait 2>/dev/null
}
trap stop_servers EXIT

pair() {
    # the port (and the -p word of the command) moved by $PORT_SHIFT
    local hca=$1 port=$(($2 + PORT_SHIFT)); shift 2
    local word previous='' words=()
    for word in "$@"; do
        [ "$previous" = -p ] && word=$port
        words+=("$word")
        previous=$word
    done
    set -- "${words[@]}"
    on "$server" "$hca" "$@" > "$hca.server.out" 2>&1 &
    local pid=$!
    server_pids+=("$pid")
    if listening "$port" "$pid"; then
        on "$client" "$hca" "$@" "$server" > "$hca.out" 2>&1
    else
        echo "clusterproof: the $hca server on $server did not listen on" \
             "port $port: $(grep -v '^srun: ' "$hca.server.out" |
                            tail -n 2 | tr -s '\n' ' ')" \
             > "$hca.out"
    fi
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}
'''


def size_label(size: int) -> str:
    """8388608 -> '8M', 1024 -> '1K', 2 -> '2' (reference keys)."""
    for unit, factor in (('G', 2 ** 30), ('M', 2 ** 20), ('K', 2 ** 10)):
        if size >= factor and size % factor == 0:
            return f'{size // factor}{unit}'
    return str(size)


def job_script(pairs: list[tuple[str, int, list[str]]], loopback: bool,
               timeout_s: int, listen_wait_s: int, numa_bind: bool,
               step_options: list[str] = (), concurrent: bool = False) -> str:
    """The script that runs one server/client pair per HCA, in turn, or
    all of them at once (``concurrent``: each pair in the background, then
    wait for all).

    ``pairs``: (hca, port, command) with the command both sides run; the
    client gets the server's host name appended. ``step_options`` go to
    the srun of each side (e.g. the GPUs for GPU memory).

    Without arguments the script runs on the job's first node (loopback)
    or first two; ``perftest_hcas.sh SERVER CLIENT SHIFT`` runs it on
    those nodes, every port moved by SHIFT (a batch job's groups).
    """
    lines = ['#!/bin/bash',
             '# clusterproof perftest: one server/client pair per HCA',
             f'PAIR_TIMEOUT={timeout_s}',
             f'LISTEN_WAIT={listen_wait_s}',
             'STEP_OPTIONS=' + shlex.quote(' '.join(step_options)),
             f'NUMA_BIND={1 if numa_bind else 0}',
             'export NUMA_BIND',
             'nodes=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))',
             'server=${nodes[0]}',
             ('client=$server' if loopback else 'client=${nodes[1]}'),
             '# a batch job names the group: server node, client node,',
             '# the shift of its ports (groups running at once differ)',
             'if [ $# -ge 2 ]; then server=$1; client=$2; fi',
             'PORT_SHIFT=${3:-0}',
             _HELPERS.strip('\n')]
    for hca, port, command in pairs:
        lines.append(f'pair {shlex.quote(hca)} {port} '
                     + ' '.join(shlex.quote(arg) for arg in command)
                     + (' &' if concurrent else ''))
    if concurrent:
        lines.append('wait')
    return '\n'.join(lines) + '\n'


def job_note(text: str) -> str | None:
    """What the job script wrote instead of a client's output, if so."""
    for line in text.splitlines():
        if line.startswith(GUARD_PREFIX):
            return line[len(GUARD_PREFIX):].strip()
    return None


def per_hca_result(results: dict[str, parsers.ParseResult]
                   ) -> parsers.ParseResult:
    """One result for all HCAs: metric ``<name>_<hca>`` per HCA; failed
    HCAs named in the reason."""
    metrics, details, failed = {}, {}, []
    for hca, result in results.items():
        details[hca] = result.details
        if not result.ok:
            failed.append(f'{hca}: {result.reason}')
            continue
        for name, metric in result.metrics.items():
            metrics[f'{name}_{hca}'] = metric
    if failed:
        return parsers.failure('perftest', '; '.join(failed), metrics,
                               {'hcas': details})
    return parsers.success('perftest', metrics, {'hcas': details})


class PerftestBase(BenchmarkTest):
    parser_tool = 'perftest'
    tool_hint = ('Azure HPC images ship perftest with MOFED/DOCA-OFED; '
                 'Debian/Ubuntu: apt install perftest; GPU memory needs a '
                 'perftest built with CUDA (--use_cuda), as '
                 'azurehpc-health-checks builds it')
    tool_is_executable = False
    valid_prog_environs = ['builtin']  # no MPI: perftest talks TCP itself
    tags = {'network', 'acceptance'}
    reference_family = 'perftest'
    expected_runtime_s = 120   # per-HCA sweeps, one after the other

    benchmark = parameter(['ib_write_bw', 'ib_send_bw', 'ib_send_lat'])
    #: '' = the benchmark's name on PATH (after perftest_dir)
    tool_binary = ''

    perftest_dir = variable(str, value='')
    #: HCAs to test; empty = the partition's extras['ib_hcas'].
    hcas = variable(typ.List[str], value=[])
    #: 'auto' = GPU memory (GPUDirect, GPU i with HCA i) where the
    #: partition has GPUs; 'on' or 'off' to force.
    gpu_memory = variable(str, value='auto')
    bidirectional = variable(bool, value=False)
    #: -a: every size from 2 B; bandwidth then comes from the largest.
    all_sizes = variable(bool, value=False)
    #: 0 = 8 MiB with GPU memory, 1 MiB otherwise; latency: perftest's 2 B.
    msg_size = variable(int, value=0)
    #: 0 = 2 QPs for host-memory bandwidth, perftest's default otherwise.
    qps = variable(int, value=0)
    #: -D seconds (bandwidth tests); perftest then measures no peak.
    #: -1 = 10 s for host-memory bandwidth (the health checks' -D 10), none
    #: otherwise (a fixed iteration count, as their GDR test runs).
    duration = variable(int, value=-1)
    base_port = variable(int, value=18515)
    numa_bind = variable(bool, value=True)
    #: perftest's "Link type" every HCA must show ('' = any; RoCE says
    #: Ethernet).
    link_type = variable(str, value='IB')
    #: Seconds each side may run before it is killed.
    pair_timeout = variable(int, value=180)
    #: Seconds to wait for a server to listen before giving up on its HCA.
    listen_wait = variable(int, value=60)
    extra_options = variable(typ.List[str], value=[])
    #: Run every HCA's pair at once ('auto' = bandwidth with GPU memory,
    #: as the health checks' GDR test does; host-memory runs and latencies
    #: go one HCA after another); 'on' or 'off' to force.
    all_hcas_at_once = variable(str, value='auto')
    recorded_variables = ['benchmark', 'bidirectional', 'all_sizes',
                          'msg_size', 'qps', 'duration', 'gpu_memory',
                          'link_type', 'all_hcas_at_once']

    loopback = False

    @run_after('init')
    def set_binary(self):
        if not self.tool_binary:
            self.tool_binary = self.benchmark

    def is_latency(self) -> bool:
        return self.benchmark.endswith('_lat')

    def uses_gpu_memory(self) -> bool:
        if self.gpu_memory == 'auto':
            return bool(self.partition_extra('gpus_per_node', 0))
        return self.gpu_memory == 'on'

    def hca_list(self) -> list[str]:
        return list(self.hcas or self.partition_extra('ib_hcas', []))

    def message_size(self) -> int:
        if self.msg_size or self.is_latency():
            return self.msg_size
        return GPU_MSG_SIZE if self.uses_gpu_memory() else HOST_MSG_SIZE

    def seconds(self) -> int:
        """-D as run (0: a fixed iteration count)."""
        if self.is_latency():
            return 0
        if self.duration >= 0:
            return self.duration
        if self.uses_gpu_memory() or self.all_sizes:
            return 0   # perftest's -a sweep runs a fixed count per size
        return HOST_DURATION_S

    def concurrent(self) -> bool:
        if self.all_hcas_at_once == 'auto':
            # latencies are measured one HCA at a time
            return self.uses_gpu_memory() and not self.is_latency()
        return self.all_hcas_at_once == 'on'

    def queue_pairs(self) -> int:
        """-q as run (0: not given, perftest's default of 1)."""
        if self.is_latency():
            return 0
        return self.qps or (0 if self.uses_gpu_memory() else HOST_QPS)

    def reference_method(self) -> dict:
        size = 'all' if self.all_sizes else size_label(self.message_size()
                                                         or 2)
        return {'test': self.benchmark, 'size': size,
                'bidir': self.bidirectional, 'gdr': self.uses_gpu_memory(),
                'layout': 'loopback' if self.loopback else '2node',
                'qps': self.queue_pairs() or 1,
                'duration': self.seconds(),
                'all_hcas': self.concurrent()}

    def reference_nodes(self) -> int:
        return 1 if self.loopback else 2

    def peak_factor(self):
        return (2, 'directions (-b)') if self.bidirectional else (1, '')

    @run_after('setup')
    def set_layout(self):
        scheduler = self.current_partition.scheduler.registered_name
        self.skip_if(scheduler not in launch.SLURM_SCHEDULERS,
                     f'{self.current_partition.fullname}: the pair script '
                     'starts its own steps with srun and reads '
                     '$SLURM_JOB_NODELIST: Slurm partitions only')
        self.skip_if(not self.hca_list(),
                     f'{self.current_partition.fullname} declares no '
                     'ib_hcas (and none were given with -S hcas=...)')
        self.num_tasks = 1 if self.loopback else 2
        self.num_tasks_per_node = 1
        if self.perftest_dir:
            self.env_vars['PATH'] = f'{self.perftest_dir}:$PATH'
        if self.uses_gpu_memory():
            gpus = self.partition_extra('gpus_per_node', 0)
            self.num_gpus_per_node = gpus  # the partition's _rfm_gpu
        metrics = LAT_METRICS if self.is_latency() else dict(BW_METRICS)
        if self.seconds():
            metrics.pop('bw_peak')
        self.keep_files = [SCRIPT] + [f'{hca}{suffix}'
                                      for hca in self.hca_list()
                                      for suffix in ('.out', '.server.out')]
        self.perf_metrics = {f'{name}_{hca}': unit
                             for hca in self.hca_list()
                             for name, unit in metrics.items()}
        # one row per metric and HCA: bw_avg_mlx5_ib0 -> bw_avg on mlx5_ib0
        self.metric_devices = {f'{name}_{hca}': hca
                               for hca in self.hca_list()
                               for name in metrics}

    def command(self, index: int, hca: str, port: int) -> list[str]:
        options = [self.tool_binary, '-d', hca, '-p', str(port), '-F']
        if self.all_sizes:
            options.append('-a')
        elif self.message_size():
            options += ['-s', str(self.message_size())]
        if not self.is_latency():
            options += ['--report_gbits', '--perform_warm_up']
            qps = self.queue_pairs()
            if qps:
                options += ['-q', str(qps)]
            if self.bidirectional:
                options.append('-b')
            if self.seconds():
                options += ['-D', str(self.seconds())]
        if self.uses_gpu_memory():
            options.append(f'--use_cuda={index}')
        return options + self.extra_options

    def step_options(self) -> list[str]:
        # The job's GPUs for the srun steps of both sides, written the way
        # the partition's GPU resource (_rfm_gpu) writes them; none declared
        # (the sandbox): no option.
        gpus = self.partition_extra('gpus_per_node', 0)
        if not (self.uses_gpu_memory() and gpus):
            return []
        return self.current_partition.get_resource('_rfm_gpu',
                                                   num_gpus_per_node=gpus)

    @run_before('run')
    def write_job_script(self):
        pairs = [(hca, self.base_port + i, self.command(i, hca,
                                                       self.base_port + i))
                 for i, hca in enumerate(self.hca_list())]
        with open(os.path.join(self.stagedir, SCRIPT), 'w') as fp:
            fp.write(job_script(pairs, self.loopback, self.pair_timeout,
                                self.listen_wait, self.numa_bind,
                                self.step_options(), self.concurrent()))
        # The script starts its own job steps: the batch shell runs it.
        launch.batch_shell(self.job)
        self.executable = 'bash'
        self.executable_opts = [SCRIPT]

    def group_command(self, index: int, group: tuple[str, ...]) -> str:
        # each group's ports apart from those of every other group (the
        # sandbox's nodes are all one host)
        server, client = group[0], group[-1]
        shift = index * len(self.hca_list())
        return ' '.join(['bash', SCRIPT, shlex.quote(server),
                         shlex.quote(client), str(shift)])

    def parse_hca(self, hca: str) -> parsers.ParseResult:
        path = os.path.join(self.output_dir(), f'{hca}.out')
        if os.path.isfile(path):
            with open(path, errors='replace') as fp:
                note = job_note(fp.read())
            if note:
                return parsers.failure(self.parser_tool, note)
        result = self.parse_file(path)
        problem = result.ok and perftest_parser.transport_problem(
            result.details, self.uses_gpu_memory(), self.link_type)
        if problem:
            return parsers.failure(self.parser_tool, problem,
                                   result.metrics, result.details)
        return result

    def parsed(self):
        if self.fanned_out() and not self.measuring_group:
            return self._on_first_good_group(self.parsed)
        # one result per group of a batch job ('' = the job's own)
        return self.parsed_once(
            f'per HCA {self.measuring_group}', lambda: per_hca_result(
                {hca: self.parse_hca(hca) for hca in self.hca_list()}))

@rfm.simple_test
class PerftestPair(PerftestBase):
    descr = ('perftest per InfiniBand HCA between two nodes (server on the '
             'first, client on the second)')
    fans_out = True
    fan_group_size = 2


@rfm.simple_test
class PerftestLoopback(PerftestBase):
    descr = 'perftest per InfiniBand HCA, server and client on one node'
    loopback = True
    fans_out = True
