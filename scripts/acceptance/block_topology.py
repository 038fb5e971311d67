"""Slurm's block topology as NVLink domains, where the nodes recorded none
(NvlinkFabric excluded or not run): ``scontrol show topology`` prints one
line per block, ``BlockName=<name> BlockIndex=<i> Nodes=<hostlist>`` (Slurm
src/plugins/topology/block/topology_block.c, ``_print_topo_record``), and
cyclecloud-slurm's ``azslurm topology -n`` writes one block per NVLink
domain (Azure/cyclecloud-slurm README, "Topology": ``BlockName=block1
Nodes=ccw-1-3-gpu-21,...``, grouped by ClusterUUID and CliqueID).
"""
from __future__ import annotations

import re

from . import slurm

_RANGE = re.compile(r'^(?P<prefix>[^\[\]]*)\[(?P<body>[^\[\]]+)\]'
                    r'(?P<suffix>[^\[\]]*)$')


def _top_level_items(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == '[') - (char == ']')
        if char == ',' and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [item for item in items if item]


def expand_hostlist(text: str) -> list[str]:
    """`gpu-[1-3,7],x` -> gpu-1 gpu-2 gpu-3 gpu-7 x (one bracket group per
    name, zero padding kept); anything else is taken as one name."""
    names = []
    for item in _top_level_items(text.strip()):
        match = _RANGE.match(item)
        if not match:
            names.append(item)
            continue
        for part in match['body'].split(','):
            low, _, high = part.partition('-')
            if not high:
                names.append(f"{match['prefix']}{low}{match['suffix']}")
                continue
            width = len(low) if low.startswith('0') else 0
            for number in range(int(low), int(high) + 1):
                names.append(f"{match['prefix']}{number:0{width}d}"
                             f"{match['suffix']}")
    return names


def parse_blocks(text: str) -> dict[str, str]:
    """`scontrol show topology` (block plugin) -> {node: 'block:<name>'}."""
    found = {}
    for line in text.splitlines():
        fields = dict(token.split('=', 1) for token in line.split()
                      if '=' in token)
        if 'BlockName' in fields and fields.get('Nodes'):
            for node in expand_hostlist(fields['Nodes']):
                found[node] = f"block:{fields['BlockName']}"
    return found


def read_blocks(env: dict | None = None) -> dict[str, str]:
    """{} where Slurm has no block topology (or does not answer)."""
    try:
        return parse_blocks(slurm.run_scontrol(['show', 'topology'], env))
    except slurm.SchedulerError:
        return {}
