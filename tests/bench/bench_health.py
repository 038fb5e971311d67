"""Seconds the health samples add to a job, and the rows they add.

    .venv/bin/python tests/bench/bench_health.py [--repeat 5] [--gpus 8]

On a node shaped like an ND A100 v4 (nine HCA ports: eight InfiniBand, one
Ethernet, each a copy of the procfs fixture's mlx5_0; --gpus GPUs in one
nvidia-smi XML, copies of Telegraf's A100 sample under distinct bus ids),
it runs the shipped sampler before and after as a job does, then the
test's assessment (parse, judge, fingerprint), and prints the median of
--repeat runs. nvidia-smi is the replaying stand-in: the real tool's own
time on eight GPUs (about a second or two, its NVML queries) is not
measured here and comes on top. Not collected by pytest (no test_ prefix).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

from checks.health import assessment, dump, fingerprint, rules  # noqa: E402
from tests.support.health_data import HEALTH, build_sysfs
from tests.support.helpers import REPO, STANDINS

SAMPLER = REPO / 'checks' / 'common' / 'node_probe.sh'
NODE = 'nd-1'
SKU = 'Standard_ND96amsr_A100_v4'


def nd_tree(root: Path) -> None:
    build_sysfs(root / 'mlx5_0')
    source = root / 'mlx5_0' / 'class' / 'infiniband' / 'mlx5_0'
    target = root / f'sys-{NODE}' / 'class' / 'infiniband'
    for index in range(8):
        shutil.copytree(source, target / f'mlx5_ib{index}')
    shutil.copytree(source, target / 'mlx5_an0')
    (target / 'mlx5_an0' / 'ports' / '1' / 'link_layer').write_text(
        'Ethernet\n')


def gpu_xml(root: Path, gpus: int) -> Path:
    text = (HEALTH / 'telegraf_a100-sxm4-v12.xml').read_text()
    start, end = text.index('<gpu id='), text.index('</gpu>') + len('</gpu>')
    one = text[start:end]
    many = ''.join(one.replace('00000000:01:00.0',
                               f'00000000:{i + 1:02X}:00.0')
                   for i in range(gpus))
    path = root / 'gpus.xml'
    path.write_text(text[:start] + many + text[end:])
    return path


def timed_sample(root: Path, phase: str, env: dict) -> float:
    began = time.perf_counter()
    subprocess.run(['sh', str(SAMPLER), phase, 'samples',
                    str(root / 'sys-%n'), str(root / 'prints')],
                   cwd=root, env=env, check=True)
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeat', type=int, default=5)
    parser.add_argument('--gpus', type=int, default=8)
    args = parser.parse_args()
    before_s, after_s, assess_s, rows = [], [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nd_tree(root)
        env = {**os.environ, 'SLURMD_NODENAME': NODE,
               'PATH': f'{STANDINS}{os.pathsep}{os.environ["PATH"]}',
               'CLUSTERPROOF_REPLAY_NVIDIA_SMI_XML': str(gpu_xml(root,
                                                             args.gpus))}
        shipped, nominal = rules.load(), rules.nominal(SKU)
        for _ in range(args.repeat):
            before_s.append(timed_sample(root, 'before', env))
            after_s.append(timed_sample(root, 'after', env))
            began = time.perf_counter()
            samples = root / 'samples'
            before = dump.split((samples / f'before.{NODE}.txt').read_text())
            after = dump.split((samples / f'after.{NODE}.txt').read_text())
            result = assessment.assess(NODE, before, after, shipped, nominal)
            fingerprint.of_node(before)
            assess_s.append(time.perf_counter() - began)
            rows = len(result.rows)
    total = (statistics.median(before_s) + statistics.median(after_s)
             + statistics.median(assess_s))
    print(f'node like {SKU}: 9 HCA ports, {args.gpus} GPUs '
          f'(median of {args.repeat})')
    print(f'  sample before : {statistics.median(before_s):.3f} s')
    print(f'  sample after  : {statistics.median(after_s):.3f} s')
    print(f'  assessment    : {statistics.median(assess_s):.3f} s '
          '(on the login node, after the job)')
    print(f'  added per job : {total:.3f} s per node, plus nvidia-smi\'s own '
          'time twice')
    print(f'  rows per node : {rows} for a test where nothing changed '
          f'(one summary per device, one not-available note)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
