"""Pure output parsers, one module per tool: text in, metrics out.

``parse(tool, text)`` is what the checks and ``scripts/clusterproof parse``
both call. Each module exposes ``TOOL`` and ``parse(text) -> ParseResult``.
"""
from __future__ import annotations

import importlib

from .base import Metric, ParseResult, failure, success

# CLI tool name -> module in this package
TOOLS = {
    'ior': 'ior',
    'stream': 'stream',
    'hpl': 'hpl',
    'hpcg': 'hpcg',
    'hpcc': 'hpcc',
    'osu': 'osu',
    'perftest': 'perftest',
    'nccl': 'nccl',
    'mpi-stage': 'mpi_stage',
    'nvbandwidth': 'nvbandwidth',
    'babelstream': 'babelstream',
    'gpu-burn': 'gpu_burn',
    'dcgmi': 'dcgmi',
    'nvlink': 'nvlink',
    'nvidia-smi': 'nvidia_smi',
}


def parser_for(tool: str):
    """The parse function of one tool; KeyError for an unknown tool."""
    module_name = TOOLS[tool]
    try:
        module = importlib.import_module(f'{__name__}.{module_name}')
    except ModuleNotFoundError as err:
        if err.name != f'{__name__}.{module_name}':
            raise
        return None
    return module.parse


def parse(tool: str, text: str, **options) -> ParseResult:
    """Parse one raw output; ``options`` go to the tool's parser (e.g. the
    OSU message size or the number of ranks a run must show)."""
    func = parser_for(tool)
    if func is None:
        return failure(tool, f'{tool}: not supported yet')
    try:
        return func(text, **options)
    except ValueError as err:
        # int() refuses numbers of more than 4300 digits: no tool prints one.
        return failure(tool, f'not {tool} output: unreadable number ({err})')


__all__ = ['Metric', 'ParseResult', 'failure', 'success', 'parse',
           'parser_for', 'TOOLS']
