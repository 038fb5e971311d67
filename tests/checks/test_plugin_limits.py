"""How much a reader has to count to follow a check (issue 36, "Done when"):
for every check class, the classes in its MRO and the hooks ReFrame runs
(``pipeline_hooks()``, ReFrame's own count); the size of every module of
``checks/common``; no pipeline stage method overridden; no plugin reading
state by name (``getattr``/``hasattr`` with a string, ``vars()``,
``__dict__``).

The tables hold today's figures as ceilings: a figure may only go down, and
a fold lowers its ceiling here. Every check is within the issue's goal, at
most GOAL_MRO classes and GOAL_HOOKS hooks (test_every_check_is_within_the_goal).
"""
import ast
import importlib
import inspect
import pkgutil

from reframe.core.pipeline import RegressionTest

from tests.support.helpers import REPO

GOAL_MRO = 12
GOAL_HOOKS = 10
MODULE_LINES = 250
AREAS = ('cpu', 'gpu', 'network', 'staging', 'storage')

# class -> (classes in its MRO, hooks), at most; lower them as plugins fold.
CEILINGS = {
    'cpu.hpcc.HpccBase': (9, 8),
    'cpu.hpcc.HpccNode': (10, 8),
    'cpu.hpcc.HpccTwoNodes': (10, 9),
    'cpu.hpcg.HpcgCheck': (9, 8),
    'cpu.hpcg.HpcgSpackCheck': (11, 8),
    'cpu.hpl.HplCheck': (9, 8),
    'cpu.hpl.HplSpackCheck': (11, 8),
    'cpu.stream.StreamBase': (9, 7),
    'cpu.stream.StreamCheck': (10, 9),
    'cpu.stream.StreamMpiCheck': (10, 8),
    'cpu.stream.StreamSpackCheck': (12, 9),
    'gpu.compute.GpuComputeBase': (10, 9),
    'gpu.compute.GpuComputeBurn': (11, 9),
    'gpu.compute.GpuComputeQuick': (11, 9),
    'gpu.copy_bandwidth.GpuCopyBandwidth': (10, 10),
    'gpu.fabric_bandwidth.GpuFabricBandwidth': (10, 10),
    'gpu.gpu_node.GpuDiag': (8, 7),
    'gpu.gpu_node.GpuDiagDaily': (9, 7),
    'gpu.gpu_node.GpuInventory': (8, 6),
    'gpu.gpu_node.GpuNodeCheck': (7, 4),
    'gpu.gpu_node.GpuNvlink': (8, 6),
    'gpu.hbm_bandwidth.GpuMemoryBandwidth': (10, 9),
    'gpu.nccl.NcclBase': (9, 10),
    'gpu.nccl.NcclHealthCheckAllReduce': (10, 10),
    'gpu.nccl.NcclHealthCheckIbLoopback': (11, 10),
    'gpu.nccl.NcclMultiNode': (10, 10),
    'gpu.nccl.NcclSingleNode': (10, 10),
    'gpu.nvlink_fabric.NvlinkFabric': (7, 5),
    'gpu.per_gpu.PerGpuBenchmark': (9, 9),
    'network.osu.OsuBase': (9, 9),
    'network.osu.OsuCollective': (10, 10),
    'network.osu.OsuPointToPoint': (10, 10),
    'network.osu.OsuPointToPointSpack': (12, 10),
    'network.perftest.PerftestBase': (9, 9),
    'network.perftest.PerftestLoopback': (10, 9),
    'network.perftest.PerftestPair': (10, 9),
    'staging.mpi_stage.MpiStageCheck': (9, 8),
    'storage.ior.IorBase': (9, 9),
    'storage.ior.IorCheck': (10, 9),
    'storage.ior.IorSpackCheck': (11, 9),
}

# ReFrame's pipeline stages: a check adds hooks to them, never replaces them
# (an override would hide work from a reader of pipeline_hooks()).
STAGE_METHODS = {'setup', 'compile', 'compile_wait', 'run', 'run_wait',
                 'sanity', 'check_sanity', 'performance',
                 'check_performance', 'cleanup'}

# file (relative to checks/) -> reads of state by name: none is left.
READS_BY_NAME = {}


def check_classes() -> dict[str, type]:
    found = {}
    for area in AREAS:
        package = importlib.import_module(f'checks.{area}')
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f'checks.{area}.{info.name}')
            for name, value in vars(module).items():
                if (inspect.isclass(value)
                        and issubclass(value, RegressionTest)
                        and value.__module__ == module.__name__):
                    found[f'{area}.{info.name}.{name}'] = value
    return found


def figures(cls: type) -> tuple[int, int]:
    hooks = sum(len(fns) for fns in cls.pipeline_hooks().values())
    return len(cls.__mro__), hooks


def test_every_check_is_within_its_ceiling():
    classes = check_classes()
    assert set(classes) == set(CEILINGS), \
        'a check class came or went: give it its figures here'
    over = {name: (figures(cls), CEILINGS[name])
            for name, cls in classes.items()
            if any(now > most for now, most
                   in zip(figures(cls), CEILINGS[name]))}
    assert not over, f'(MRO, hooks) now and at most: {over}'


def test_the_ceilings_are_todays_figures():
    """A fold that lowers a check's figures lowers its ceiling too, so that
    what was gained cannot come back unnoticed."""
    loose = {name: (figures(cls), CEILINGS[name])
             for name, cls in check_classes().items()
             if figures(cls) != CEILINGS[name]}
    assert not loose, f'(MRO, hooks) now and in CEILINGS: {loose}'


def test_every_check_is_within_the_goal():
    """At most GOAL_MRO classes and GOAL_HOOKS hooks for every check:
    BenchmarkTest and its two plugins (JobScript, ParsedOutput), with one
    hook per stage it needs (benchmark.py's docstring lists them)."""
    over = {name: figures(cls) for name, cls in check_classes().items()
            if figures(cls)[0] > GOAL_MRO or figures(cls)[1] > GOAL_HOOKS}
    assert not over, f'(MRO, hooks): {over}'


def test_no_check_overrides_a_pipeline_stage():
    overridden = {f'{name}.{method}'
                  for name, cls in check_classes().items()
                  for klass in cls.__mro__
                  if klass.__module__.startswith('checks.')
                  for method in STAGE_METHODS & set(vars(klass))}
    assert not overridden


def test_no_module_of_checks_common_is_over_the_limit():
    sizes = {path.name: len(path.read_text().splitlines())
             for path in (REPO / 'checks' / 'common').glob('*.py')}
    assert {name: lines for name, lines in sizes.items()
            if lines > MODULE_LINES} == {}


def reads_by_name(tree: ast.AST) -> int:
    """getattr/hasattr(self, 'name'...), vars(self) and self.__dict__."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = node.args
            if (node.func.id in ('getattr', 'hasattr', 'setattr')
                    and len(args) >= 2
                    and isinstance(args[0], ast.Name)
                    and args[0].id == 'self'):
                count += 1
            elif (node.func.id == 'vars' and args
                  and isinstance(args[0], ast.Name) and args[0].id == 'self'):
                count += 1
        elif (isinstance(node, ast.Attribute) and node.attr == '__dict__'
              and isinstance(node.value, ast.Name)
              and node.value.id == 'self'):
            count += 1
    return count


def test_reads_of_state_by_name_only_go_down():
    """In the modules that hold ReFrame tests or plugins (a plain data
    class's own ``__dict__`` is not another's state)."""
    found = {}
    for path in sorted((REPO / 'checks').rglob('*.py')):
        text = path.read_text()
        if 'import reframe' not in text:
            continue
        count = reads_by_name(ast.parse(text))
        if count:
            found[str(path.relative_to(REPO / 'checks'))] = count
    assert found == READS_BY_NAME
