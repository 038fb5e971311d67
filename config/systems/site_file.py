"""The site file `clusterproof discover` writes and config/systems/azure.py
reads: which Slurm partition is which SKU family.

It lives at ``$CLUSTERPROOF_HOME/site-partitions.yaml`` (one small YAML file
for the user to review). Each entry under ``partitions`` is keyed by the
Slurm partition::

    partitions:
      hpc:   {family: hbv4}
      gpu:   {family: ndv5, candidates: [ndv4, ndv5, ndh200v5]}
      htc:   {family: null}          # no SKU family: not tested

``name`` (optional) is the ReFrame partition name; by default the family's
(``hbv4``), or ``<family>-<slurm partition>`` when two Slurm partitions are
the same family.
"""
from __future__ import annotations

import datetime as dt
import socket
from pathlib import Path

import yaml

from ..results.store import files as store
from .azure_skus import SKUS

FILE_NAME = 'site-partitions.yaml'


class SiteFileError(ValueError):
    """The site file cannot be read or names an unknown family."""


def path() -> Path:
    return store.home() / FILE_NAME


def _entry_text(proposal) -> str:
    part = proposal.partition
    states = ', '.join(f'{count} {state}'
                       for state, count in sorted(part.states.items()))
    lines = [f'  {part.name}:',
             f'    family: {proposal.family or "null"}']
    if len(proposal.candidates) > 1:
        lines.append(f'    candidates: [{", ".join(proposal.candidates)}]')
    lines.append(f'    # {len(part.nodes)} nodes ({states}); {proposal.basis}')
    if proposal.family:
        sku = SKUS[proposal.family]['extras']['vm_sku']
        lines.append(f'    # judged as {sku}')
    if len(proposal.candidates) > 1:
        lines.append('    # AMBIGUOUS: these families look the same to Slurm; '
                     'the first job records the VM size the nodes report '
                     '(vm_sku_observed) and a node of another SKU is a '
                     'finding: set family to what it says')
    if not proposal.candidates:
        lines.append('    # no SKU family of clusterproof has this shape: '
                     'not tested (set family to one of: '
                     f'{", ".join(SKUS)} to test it)')
    return '\n'.join(lines)


def render(proposals) -> str:
    when = dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    header = [
        f'# Written by `clusterproof discover` on {socket.gethostname()} at '
        f'{when} from sinfo.',
        '# Review it: each Slurm partition and the SKU family its checks '
        'run and are judged as.',
        '# CLUSTERPROOF_AZURE_PARTITIONS, when set, wins over this file.',
        'partitions:',
    ]
    return '\n'.join(header + [_entry_text(p) for p in proposals]) + '\n'


def write(proposals, target: Path | None = None) -> Path:
    target = target or path()
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(target.name + '.tmp')
    scratch.write_text(render(proposals))
    scratch.replace(target)
    return target


def entries_from(data) -> list[tuple[str, str, str]]:
    """(ReFrame partition name, family, Slurm partition) of every entry
    with a family, in file order."""
    partitions = (data or {}).get('partitions') if isinstance(data, dict) \
        else None
    if not isinstance(partitions, dict):
        raise SiteFileError('no `partitions:` mapping')
    families = _family_counts(partitions)
    chosen, names = [], set()
    for slurm_name, entry in partitions.items():
        entry = entry or {}
        family = entry.get('family')
        if not family:
            continue
        if family not in SKUS:
            raise SiteFileError(f'partition {slurm_name}: unknown family '
                                f'{family!r}; known: {", ".join(SKUS)}')
        name = entry.get('name') or (family if families[family] == 1
                                     else f'{family}-{slurm_name}')
        if name in names:
            raise SiteFileError(f'partition name {name!r} used twice')
        names.add(name)
        chosen.append((name, family, str(slurm_name)))
    return chosen


def _family_counts(partitions: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in partitions.values():
        family = (entry or {}).get('family')
        if family:
            counts[family] = counts.get(family, 0) + 1
    return counts


def entries_of(proposals) -> list[tuple[str, str, str]]:
    """The entries a freshly discovered cluster gives (nothing written)."""
    return entries_from({'partitions': {p.partition.name: {'family': p.family}
                                        for p in proposals}})


def load(target: Path | None = None) -> list[tuple[str, str, str]] | None:
    """The file's entries; None when there is no file."""
    target = target or path()
    try:
        text = target.read_text()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SiteFileError(f'{target}: {error}') from None
    try:
        return entries_from(yaml.safe_load(text))
    except yaml.YAMLError as error:
        raise SiteFileError(f'{target}: not YAML: {error}') from None
    except SiteFileError as error:
        raise SiteFileError(f'{target}: {error}') from None
