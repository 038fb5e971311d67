"""Sysfs trees and samples for the health tests, built from the real
public data in tests/support/data/health (see its PROVENANCE.md)."""
from __future__ import annotations

from pathlib import Path

from tests.support.helpers import DATA

HEALTH = DATA / 'health'
TTAR = HEALTH / 'procfs_sys_class_infiniband.ttar'
FIXTURE_PREFIX = 'fixtures/sys/'
NDR_RATE = '400 Gb/sec (4X NDR)'
PORT = 'class/infiniband/mlx5_0/ports/1'


def ttar_files(text: str) -> dict[str, str]:
    """{path: content} of a ttar archive (prometheus/procfs's format:
    'Path:', 'Lines: N', N lines, 'Mode:'; a last line ending in 'EOF' has
    no newline)."""
    files, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith('Path: '):
            path = lines[i][len('Path: '):]
            count = int(lines[i + 1][len('Lines: '):])
            body = lines[i + 2:i + 2 + count]
            content = '\n'.join(body) + '\n'
            if body and body[-1].endswith('EOF'):
                content = content[:-len('EOF\n')]
            files[path] = content
            i += 2 + count
        else:
            i += 1
    return files


def build_sysfs(root: Path, rate: str | None = NDR_RATE,
                hcas: tuple[str, ...] | None = ('mlx5_0',)) -> Path:
    """The fixture's /sys/class/infiniband under root (root plays /sys),
    only the HCAs named (None: all four ports of the fixture); mlx5_0's
    port 1 at ``rate`` (None keeps the fixture's 25 Gb/s)."""
    for path, content in ttar_files(TTAR.read_text()).items():
        relative = path[len(FIXTURE_PREFIX):]
        hca = relative.split('/')[2]
        if hcas is not None and hca not in hcas:
            continue
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    if rate:
        (root / PORT / 'rate').write_text(rate + '\n')
    return root


def raise_counter(root: Path, name: str, by: int) -> None:
    path = root / PORT / 'counters' / name
    path.write_text(f'{int(path.read_text()) + by}\n')
