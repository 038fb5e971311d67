"""`clusterproof sandbox start|stop|status`: a five-node Slurm cluster on this host.

Everything lives under one state directory and listens on 127.0.0.1 (slurmdbd too
where this host's name resolves to loopback; it has no bind option). There is no
systemd: each daemon is started directly, as root, and stopped through its pid file.
Accounting (slurmdbd on a private MariaDB) is on because ReFrame's `slurm` scheduler
polls sacct. The five nodes are five slurmd processes (`slurmd -N`) on this one host
(five, so that acceptance runs pair every node with two different partners and judge
every node against at least four peers, the node itself not counted).
"""

import json
import os
import shlex
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from glob import glob
from pathlib import Path

from config.results import settings
from scripts.cli import repo
from scripts.cli.sandbox_cgroup import CpuCap, local_cgroup_problem

CLUSTER = 'sandbox'
NODES = ('sb-n1', 'sb-n2', 'sb-n3', 'sb-n4', 'sb-n5')
NODE_LIST = 'sb-n[1-5]'
PARTITIONS = ('hbv4', 'ndv5')  # the first one is the default partition
CORES_PER_NODE = 2
START_TIMEOUT_S = 90
STOP_TIMEOUT_S = 30
DIR_VARIABLE = settings.SANDBOX_DIR

# Jobs run as root, and both fake nodes share one host, so Open MPI has to be told to
# accept root and to use TCP over loopback (its TCP transport skips 127.0.0.0/8 by default).
JOB_ENV = {
    'OMPI_ALLOW_RUN_AS_ROOT': '1',
    'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
    'OMPI_MCA_pml': 'ob1',
    'OMPI_MCA_btl': 'self,vader,tcp',
    'OMPI_MCA_btl_tcp_if_include': 'lo',
    'OMPI_MCA_oob_tcp_if_include': 'lo',
    'OMPI_MCA_btl_vader_single_copy_mechanism': 'none',
}

# What the sandbox runs, and the Debian package that provides it.
REQUIRED_COMMANDS = {
    'munged': 'munge', 'mungekey': 'munge', 'munge': 'munge',
    'mariadbd': 'mariadb-server', 'mariadb-install-db': 'mariadb-server',
    'mariadb': 'mariadb-server',
    'slurmctld': 'slurmctld', 'slurmd': 'slurmd', 'slurmdbd': 'slurmdbd',
    'sinfo': 'slurm-client', 'scontrol': 'slurm-client', 'sacctmgr': 'slurm-client',
    'squeue': 'slurm-client', 'scancel': 'slurm-client', 'srun': 'slurm-client',
    'sbatch': 'slurm-client', 'sacct': 'slurm-client',
    'mpicc': 'libopenmpi-dev', 'mpirun': 'openmpi-bin',
    'setsid': 'util-linux',
}
# Slurm's pmix plugin dlopens the unversioned libpmix.so, which only libpmix-dev ships.
REQUIRED_FILES = {
    '/usr/lib/*/slurm-wlm/mpi_pmix.so': 'slurm-wlm-basic-plugins',
    '/usr/lib/*/slurm-wlm/accounting_storage_mysql.so': 'slurm-wlm-mysql-plugin',
    '/usr/lib/*/pmix2/lib/libpmix.so': 'libpmix-dev',
}
SEARCH_PATH = os.pathsep.join([os.environ.get('PATH', ''), '/usr/sbin', '/sbin'])


class SandboxError(RuntimeError):
    """A start or stop that failed; the message says why and which log to read."""


def default_dir():
    return settings.sandbox_dir()


def missing_packages():
    """Debian packages whose commands or files are absent here, sorted."""
    missing = {pkg for cmd, pkg in REQUIRED_COMMANDS.items()
               if not shutil.which(cmd, path=SEARCH_PATH)}
    missing |= {pkg for pattern, pkg in REQUIRED_FILES.items() if not glob(pattern)}
    return sorted(missing)


def prerequisite_problem(is_root, missing, cgroup=None):
    """The message explaining why the sandbox cannot start here, or None when it can."""
    problems = []
    if not is_root:
        problems.append('the sandbox must run as root (its daemons and jobs run as root)')
    if cgroup:
        problems.append(cgroup)
    if missing:
        problems.append('missing Debian packages; install them with:\n'
                        f'  apt-get install -y {" ".join(missing)}\n'
                        '(or run: bash scripts/setup.sh --test)')
    if not problems:
        return None
    return 'cannot run the Slurm sandbox: ' + '; '.join(problems)


def check_prerequisites():
    return prerequisite_problem(os.geteuid() == 0, missing_packages(),
                                local_cgroup_problem())


class Layout:
    """The paths of one sandbox state directory."""

    def __init__(self, directory):
        self.dir = Path(directory).resolve()
        self.slurm_conf = self.dir / 'slurm.conf'
        self.slurmdbd_conf = self.dir / 'slurmdbd.conf'
        self.task_prolog = self.dir / 'task-prolog.sh'
        self.env_file = self.dir / 'env'
        self.secrets_file = self.dir / 'secrets.json'
        self.munge_key = self.dir / 'munge' / 'munge.key'
        self.munge_socket = self.dir / 'munge' / 'munge.socket'
        self.db_data = self.dir / 'mariadb' / 'data'
        self.db_socket = self.dir / 'mariadb' / 'mariadb.sock'
        self.run = self.dir / 'run'
        self.log = self.dir / 'log'
        self.state = self.dir / 'state'
        self.spool = self.dir / 'spool'
        self.tmp = self.dir / 'tmp'
        # What config/systems/sandbox.py declares as shared_fs and local_nvme.
        self.shared = self.dir / 'shared'
        self.local = self.dir / 'local'

    def created(self):
        """Everything start writes directly under the state directory."""
        return [self.slurm_conf, self.slurmdbd_conf, self.task_prolog, self.env_file,
                self.secrets_file, self.munge_key.parent, self.db_data.parent, self.run,
                self.log, self.state, self.spool, self.tmp, self.shared, self.local]

    def pid_file(self, daemon):
        return self.run / f'{daemon}.pid'

    def log_file(self, daemon):
        return self.log / f'{daemon}.log'


# Start order; stop goes the other way.
DAEMONS = ('munged', 'mariadbd', 'slurmdbd', 'slurmctld') + tuple(f'slurmd-{n}' for n in NODES)


def client_env(directory):
    """Variables a client (sinfo, sbatch, reframe) needs to use the sandbox."""
    layout = Layout(directory)
    return {'SLURM_CONF': str(layout.slurm_conf), DIR_VARIABLE: str(layout.dir), **JOB_ENV}


def _daemon_env(layout):
    # The marker variable lets stop() recognise our processes behind a recycled pid.
    # Daemons (MariaDB's temporary tables) keep their temporary files in the
    # state directory: the caller's TMPDIR may go before the sandbox does.
    return {**os.environ, **client_env(layout.dir), 'PATH': SEARCH_PATH,
            'TMPDIR': str(layout.tmp)}


def _pid_if_ours(layout, daemon):
    try:
        pid = int(layout.pid_file(daemon).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if _is_ours(layout, pid, _program(daemon)) else None


def _program(daemon):
    return daemon.split('-')[0]  # slurmd-sb-n1 -> slurmd


def _is_ours(layout, pid, program):
    """Whether pid is a live `program` that this sandbox started (a pid can be recycled)."""
    marker = f'{DIR_VARIABLE}={layout.dir}'.encode()
    try:
        stat = Path(f'/proc/{pid}/stat').read_text()
        name, state = stat[stat.index('(') + 1:stat.rindex(')')], stat.rsplit(')', 1)[1].split()[0]
        if name != program or state == 'Z':
            return False
        return marker in Path(f'/proc/{pid}/environ').read_bytes().split(b'\0')
    except (OSError, ValueError, IndexError):
        return False


def running_daemons(directory):
    layout = Layout(directory)
    return {d: pid for d in DAEMONS if (pid := _pid_if_ours(layout, d))}


def slurmd_pid(directory, node):
    """The pid of *node*'s slurmd (from its pid file, checked to be this
    sandbox's), None when it does not run."""
    if node not in NODES:
        raise SandboxError(f'no node {node!r} in the sandbox: {", ".join(NODES)}')
    return _pid_if_ours(Layout(directory), f'slurmd-{node}')


def node_cpu_cap(directory, node, cpus):
    """A cap of *cpus* CPUs on *node* (its slurmd, so every job step it
    starts from now on; the other nodes share the host's cores as before):
    the node made slow for real. Use as a context manager; it is undone on
    leaving (sandbox_cgroup.CpuCap)."""
    pid = slurmd_pid(directory, node)
    if pid is None:
        raise SandboxError(f'slurmd of {node} does not run in {directory}')
    return CpuCap([pid], f'clusterproof-sandbox-{node}-{pid}', cpus)


def _free_ports(count):
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(('127.0.0.1', 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _slurm_conf(layout, ports):
    nodes = '\n'.join(
        f'NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports[node]} '
        f'CPUs={CORES_PER_NODE} Boards=1 SocketsPerBoard=1 CoresPerSocket={CORES_PER_NODE} '
        'ThreadsPerCore=1 RealMemory=1024 State=UNKNOWN' for node in NODES)
    partitions = '\n'.join(
        f'PartitionName={p} Nodes={NODE_LIST} Default={"YES" if i == 0 else "NO"} '
        'MaxTime=INFINITE State=UP' for i, p in enumerate(PARTITIONS))
    return f"""\
# Written by `clusterproof sandbox start`; rewritten on every fresh start.
ClusterName={CLUSTER}
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports['slurmctld']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={layout.munge_socket}
CredType=cred/munge
{_bind_parameters('NoCtldInAddrAny', 'NoInAddrAny')}StateSaveLocation={layout.state}
SlurmdSpoolDir={layout.spool}/%n
SlurmctldPidFile={layout.pid_file('slurmctld')}
SlurmdPidFile={layout.run}/slurmd-%n.pid
SlurmctldLogFile={layout.log_file('slurmctld')}
SlurmdLogFile={layout.log}/slurmd-%n.log
TmpFS={layout.tmp}/%n
# No cgroup plugins: track processes through /proc and bind nothing (slurmd
# still needs a cgroup file system on /sys/fs/cgroup; start checks it first).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
TaskProlog={layout.task_prolog}
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Both nodes are this host: trust the configured size instead of draining on a mismatch.
SlurmdParameters=config_overrides
ReturnToService=2
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports['slurmdbd']}
# Clients reach slurmdbd with this munge socket, not AuthInfo's.
AccountingStoragePass=socket={layout.munge_socket}
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/none
MailProg=/bin/true
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmctldTimeout=60
SlurmdTimeout=120
{nodes}
{partitions}
"""


def _hostname_is_127_0_0_1():
    """Whether this host's name resolves to the address the sandbox's clients
    use. Only then can the daemons bind to their host name's address (and so
    stay on loopback): elsewhere (no /etc/hosts entry, 127.0.1.1, a container
    IP) that binding would miss 127.0.0.1 or fail, so they bind to any address
    on their own ports, guarded by the sandbox's munge key."""
    try:
        return socket.gethostbyname(socket.gethostname()) == '127.0.0.1'
    except OSError:
        return False


def _bind_parameters(*names):
    if not _hostname_is_127_0_0_1():
        return ''
    return f"CommunicationParameters={','.join(names)}\n"


def _slurmdbd_conf(layout, ports, db_password):
    # slurmdbd has no bind address option; see _hostname_is_127_0_0_1.
    bind = _bind_parameters('NoInAddrAny')
    return f"""\
# Written by `clusterproof sandbox start`.
{bind}AuthType=auth/munge
AuthInfo=socket={layout.munge_socket}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports['slurmdbd']}
SlurmUser=root
PidFile={layout.pid_file('slurmdbd')}
LogFile={layout.log_file('slurmdbd')}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mariadbd']}
StorageUser=slurm
StoragePass={db_password}
StorageLoc=slurm_acct_db
"""


def _task_prolog():
    # slurmstepd adds every "export NAME=VALUE" line a TaskProlog prints to the task's env.
    lines = ''.join(f'echo export {k}={v}\n' for k, v in JOB_ENV.items())
    return f'#!/bin/sh\n{lines}'


def _write(path, text, mode=0o644):
    path.write_text(text)
    path.chmod(mode)


def _db_password(layout):
    try:
        return json.loads(layout.secrets_file.read_text())['db_password']
    except (OSError, ValueError, KeyError):
        password = secrets.token_hex(16)
        _write(layout.secrets_file, json.dumps({'db_password': password}), 0o600)
        return password


def _prepare(layout):
    """Create the directories, keys and config files; returns the ports chosen."""
    # Unix socket paths (munge, MariaDB, PMIx under the spool) must fit in 108 bytes.
    if len(str(layout.dir)) > 60:
        raise SandboxError(f'state directory path too long for unix sockets (over 60 '
                           f'characters): {layout.dir}; pick a shorter --dir')
    for path in (layout.run, layout.log, layout.state, layout.spool, layout.db_data,
                 layout.shared, layout.local,
                 layout.munge_key.parent, *(layout.tmp / n for n in NODES),
                 *(layout.spool / n for n in NODES)):
        path.mkdir(parents=True, exist_ok=True)
    # munged wants its socket directory searchable by all (its key stays 0600).
    layout.dir.chmod(0o755)
    layout.munge_key.parent.chmod(0o755)
    if not layout.munge_key.exists():
        _run(['mungekey', '--create', f'--keyfile={layout.munge_key}'], layout)
    names = ('slurmctld', 'slurmdbd', 'mariadbd') + NODES
    ports = dict(zip(names, _free_ports(len(names))))
    _write(layout.slurm_conf, _slurm_conf(layout, ports))
    _write(layout.slurmdbd_conf, _slurmdbd_conf(layout, ports, _db_password(layout)), 0o600)
    _write(layout.task_prolog, _task_prolog(), 0o755)
    # A shell that sources the env file uses the sandbox: ReFrame and
    # `clusterproof acceptance` pick the system from RFM_SYSTEM.
    exports = ''.join(f'export {k}={shlex.quote(v)}\n'
                      for k, v in {**client_env(layout.dir),
                                   'RFM_SYSTEM': 'sandbox'}.items())
    _write(layout.env_file, exports)
    return ports


def _run(argv, layout, check=True, timeout=60):
    result = subprocess.run(argv, env=_daemon_env(layout), stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise SandboxError(f'`{" ".join(argv)}` failed ({result.returncode}): '
                           f'{(result.stderr or result.stdout).strip()}')
    return result


def _launch(argv, layout, daemon):
    """Start a daemon that detaches itself; its output goes to its log file."""
    out_path = layout.log_file(daemon + '.out')
    with open(out_path, 'ab') as out:
        result = subprocess.run(argv, env=_daemon_env(layout), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, check=False, timeout=60)
    if result.returncode != 0:
        raise SandboxError(f'{daemon} did not start (exit {result.returncode}); '
                           f'see {layout.log_file(daemon)} and {out_path}')


def _wait_for(what, ready, log_paths, layout=None, daemons=(), timeout=START_TIMEOUT_S):
    """Poll ready() until it holds; give up early when one of `daemons` has died."""
    logs = ', '.join(str(p) for p in log_paths)
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if ready():
            return
        # Daemons write their pid file once detached; give them a moment to do so.
        if time.monotonic() - began > 5:
            dead = [d for d in daemons if not _pid_if_ours(layout, d)]
            if dead:
                raise SandboxError(f'{", ".join(dead)} exited during start; see {logs}')
        time.sleep(0.5)
    raise SandboxError(f'{what} not ready after {timeout} s; see {logs}')


def _succeeds(argv, layout):
    try:
        return _run(argv, layout, check=False, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _start_munge(layout):
    # --force: munged refuses a socket below a directory others cannot search
    # (pytest's 0700 temp dirs); only root uses this socket anyway.
    _launch(['munged', '--force', f'--socket={layout.munge_socket}',
             f'--key-file={layout.munge_key}', f'--pid-file={layout.pid_file("munged")}',
             f'--log-file={layout.log_file("munged")}',
             f'--seed-file={layout.munge_key.parent / "munged.seed"}'], layout, 'munged')
    credential = lambda: _succeeds(['munge', '-n', f'--socket={layout.munge_socket}'], layout)
    _wait_for('munged', credential, [layout.log_file('munged')], layout, ['munged'])


def _mariadb_sql(layout, sql):
    return _run(['mariadb', '--no-defaults', f'--socket={layout.db_socket}', '-u', 'root',
                 '-e', sql], layout, check=False, timeout=20)


def _start_mariadb(layout, port, db_password):
    if not (layout.db_data / 'mysql').is_dir():
        _run(['mariadb-install-db', '--no-defaults', '--user=root', f'--datadir={layout.db_data}',
              '--auth-root-authentication-method=socket', '--skip-test-db'], layout, timeout=120)
    # The buffer pool and lock timeout are the sizes slurmdbd asks for at start.
    _launch(['setsid', '-f', 'mariadbd', '--no-defaults', '--user=root',
             f'--datadir={layout.db_data}', f'--socket={layout.db_socket}', f'--port={port}',
             '--bind-address=127.0.0.1', '--skip-name-resolve', '--skip-log-bin',
             f'--pid-file={layout.pid_file("mariadbd")}',
             f'--log-error={layout.log_file("mariadbd")}',
             '--innodb-buffer-pool-size=1G', '--innodb-lock-wait-timeout=900'],
            layout, 'mariadbd')
    _wait_for('MariaDB', lambda: _mariadb_sql(layout, 'SELECT 1').returncode == 0,
              [layout.log_file('mariadbd')], layout, ['mariadbd'])
    grant = _mariadb_sql(layout, f"""
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '{db_password}';
        ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{db_password}';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';""")
    if grant.returncode != 0:
        raise SandboxError(f'MariaDB refused the slurm user: {grant.stderr.strip()}')


def _start_slurmdbd(layout):
    _launch(['slurmdbd'], layout, 'slurmdbd')
    listed = lambda: _succeeds(['sacctmgr', '-n', '-P', 'list', 'cluster'], layout)
    _wait_for('slurmdbd', listed, [layout.log_file('slurmdbd'), layout.log_file('mariadbd')],
              layout, ['slurmdbd', 'mariadbd'])
    clusters = _run(['sacctmgr', '-n', '-P', 'list', 'cluster', 'format=cluster'], layout)
    if CLUSTER not in clusters.stdout.split():
        _run(['sacctmgr', '-i', 'add', 'cluster', CLUSTER], layout)


def _start_slurmctld(layout):
    _launch(['slurmctld', '-f', str(layout.slurm_conf)], layout, 'slurmctld')
    up = lambda: 'UP' in _run(['scontrol', 'ping'], layout, check=False).stdout
    _wait_for('slurmctld', up, [layout.log_file('slurmctld')], layout, ['slurmctld'])


def node_states(directory):
    """{node: state} as sinfo reports it (e.g. 'idle', 'down*'); empty when unreachable."""
    layout = Layout(directory)
    try:
        result = _run(['sinfo', '-h', '-N', '-o', '%N %T'], layout, check=False, timeout=20)
    except subprocess.TimeoutExpired:
        return {}
    return dict(line.split() for line in result.stdout.splitlines() if len(line.split()) == 2)


def _start_nodes(layout):
    for node in NODES:
        _launch(['slurmd', '-N', node, '-f', str(layout.slurm_conf)], layout, f'slurmd-{node}')
    all_idle = lambda: all(node_states(layout.dir).get(n) == 'idle' for n in NODES)
    try:
        _wait_for(f'nodes {", ".join(NODES)} (idle in sinfo)', all_idle,
                  [layout.log_file('slurmctld')] + [layout.log_file(f'slurmd-{n}') for n in NODES],
                  layout, ['slurmctld'] + [f'slurmd-{n}' for n in NODES])
    except SandboxError as error:
        states = ', '.join(f'{n} {s}' for n, s in sorted(node_states(layout.dir).items()))
        raise SandboxError(f'{error} (sinfo says: {states or "nothing"})') from None


def start(directory, say=print):
    """Start the sandbox; returns False when it was already running."""
    layout = Layout(directory)
    running = running_daemons(layout.dir)
    if len(running) == len(DAEMONS):
        say(f'sandbox already running in {layout.dir}')
        return False
    if running:
        say(f'sandbox partly running ({", ".join(running)}); restarting it')
        stop(layout.dir, say=lambda _: None, keep=True)
    began = time.monotonic()
    ports = _prepare(layout)
    try:
        _start_munge(layout)
        _start_mariadb(layout, ports['mariadbd'], _db_password(layout))
        _start_slurmdbd(layout)
        _start_slurmctld(layout)
        _start_nodes(layout)
    except (SandboxError, subprocess.TimeoutExpired) as error:
        stop(layout.dir, say=lambda _: None, keep=True)
        raise SandboxError(f'{error} (sandbox stopped again; logs kept in {layout.log})') \
            from error
    say(f'sandbox started in {time.monotonic() - began:.0f} s: cluster {CLUSTER!r}, nodes '
        f'{", ".join(NODES)}, partitions {", ".join(PARTITIONS)}')
    return True


def _queued_jobs(layout):
    try:
        return _run(['squeue', '-h', '-o', '%A'], layout, check=False, timeout=20).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return []


def _cancel_jobs(layout):
    """Cancel queued and running jobs so that no job step outlives the daemons."""
    jobs = _queued_jobs(layout)
    if not jobs:
        return
    _run(['scancel', *jobs], layout, check=False, timeout=20)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline and _queued_jobs(layout):
        time.sleep(0.5)


def _signal(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _terminate(layout, pids, program):
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline and any(_is_ours(layout, p, program) for p in pids):
        time.sleep(0.2)
    _signal([p for p in pids if _is_ours(layout, p, program)], signal.SIGKILL)


def _with_descendants(roots):
    children = {}
    for proc in Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / 'stat').read_text()
            ppid = int(stat.rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(proc.name))
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _kill_leftover_steps(layout):
    """Job steps that outlived their slurmd (no slurmctld left to cancel them):
    our slurmstepd processes, recognised by the marker, and the tasks under them."""
    pids = [int(proc.name) for proc in Path('/proc').iterdir() if proc.name.isdigit()]
    steps = [pid for pid in pids if _is_ours(layout, pid, 'slurmstepd')]
    _signal(_with_descendants(steps), signal.SIGKILL)


def _remove_state(layout):
    """Delete what start created under the state directory (and the directory
    itself once empty); anything else a user put there stays."""
    for path in layout.created():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    try:
        layout.dir.rmdir()
    except OSError:
        pass


def stop(directory, say=print, keep=False):
    """Stop every daemon of the sandbox and, unless ``keep``, delete its state
    directory; returns False when nothing was running."""
    layout = Layout(directory)
    running = running_daemons(layout.dir)
    if not running:
        say(f'sandbox not running in {layout.dir}')
        if not keep and layout.dir.is_dir():
            _remove_state(layout)
            say(f'removed {layout.dir}')
        return False
    if 'slurmctld' in running:
        _cancel_jobs(layout)
    for daemon in reversed(DAEMONS):
        if daemon in running:
            _terminate(layout, [running[daemon]], _program(daemon))
    _kill_leftover_steps(layout)
    for daemon in DAEMONS:
        layout.pid_file(daemon).unlink(missing_ok=True)
    say(f'sandbox stopped ({", ".join(running)})')
    if keep:
        say(f'state kept in {layout.dir}')
    else:
        _remove_state(layout)
        say(f'removed {layout.dir}')
    return True


def status(directory, say=print):
    """Report daemons and nodes; True when every daemon runs."""
    layout = Layout(directory)
    running = running_daemons(layout.dir)
    say(f'sandbox in {layout.dir}')
    for daemon in DAEMONS:
        state = f'running, pid {running[daemon]}' if daemon in running else 'stopped'
        say(f'  {daemon:<16} {state}')
    if 'slurmctld' in running:
        for node, state in sorted(node_states(layout.dir).items()):
            say(f'  node {node:<11} {state}')
    return len(running) == len(DAEMONS)


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'sandbox', help='run a five-node Slurm cluster on this host (root, loopback only)',
        description='Start, stop or inspect a local Slurm cluster (slurmctld, slurmdbd with '
                    'MariaDB, five slurmd nodes sb-n1 to sb-n5, partitions hbv4 and ndv5) '
                    'under one state directory. Needs root and the Debian packages that '
                    '`bash scripts/setup.sh --test` installs. `status` exits 1 when not '
                    'everything runs.')
    parser.add_argument('action', choices=('start', 'stop', 'status'))
    parser.add_argument('--dir', type=Path, default=None,
                        help=f'state directory (default: ${DIR_VARIABLE}, else '
                             '${TMPDIR:-/tmp}/clusterproof-sandbox)')
    parser.add_argument('--keep', action='store_true',
                        help='stop: keep the state directory (logs, database, '
                             'shared files) instead of deleting it')
    parser.set_defaults(func=run)
    return parser


#: The acceptance run `start` shows: every node of a partition judged on
#: HPCC on one node, the one benchmark that runs for real on the sandbox's
#: nodes (HpccTwoNodes would add a pair phase of five rounds).
ACCEPTANCE_PARTITION = 'hbv4'
ACCEPTANCE_CHECKS = repo.REPO / 'checks' / 'cpu' / 'hpcc.py'
ACCEPTANCE_EXCLUDE = 'HpccTwoNodes'


def run(args):
    directory = args.dir or default_dir()
    # Only start needs the packages and cgroups, so a half-removed install can
    # still be stopped.
    starting = args.action == 'start'
    problem = prerequisite_problem(os.geteuid() == 0,
                                   missing_packages() if starting else [],
                                   local_cgroup_problem() if starting else None)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if args.action == 'status':
        return 0 if status(directory) else 1
    try:
        if args.action == 'stop':
            stop(directory, keep=getattr(args, 'keep', False))
            return 0
        start(directory)
    except SandboxError as error:
        print(f'sandbox: {error}', file=sys.stderr)
        return 1
    env_file = Layout(directory).env_file
    dir_args = ['--dir', str(args.dir)] if args.dir else []
    reframe = repo.reframe_command_line('--system', 'sandbox', '-c', 'checks',
                                        '-r')
    acceptance = repo.clusterproof_command_line(
        'acceptance', '--partition', ACCEPTANCE_PARTITION,
        '--checks', repo.shown(ACCEPTANCE_CHECKS),
        '--exclude', ACCEPTANCE_EXCLUDE)
    stop_line = repo.clusterproof_command_line('sandbox', 'stop', *dir_args)
    print(f'use it with:\n  source {env_file}\n  {reframe}\n  {acceptance}\n'
          f'stop it with:\n  {stop_line}')
    return 0
