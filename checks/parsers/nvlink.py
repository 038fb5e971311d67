"""``nvidia-smi nvlink -s`` (links and their speeds) and ``nvidia-smi
nvlink -e`` (error counters per link), read by checks/health/nvlink.py, as
one ParseResult.

Metrics: ``gpus``; from ``-s``: ``links_active``, ``links_inactive`` (all
GPUs together), ``link_speed_min`` (GB/s, the slowest active link), and
``links_active_min`` (the fewest active links of one GPU); from ``-e``:
each counter summed over every GPU and link (``replay_errors``,
``recovery_errors``, ``crc_errors``...). Per GPU, ``details['gpus']``.

``ok`` is False on text without a 'GPU N:' heading, on a line that is
neither a heading nor a link (an elided excerpt is not the whole output:
the line is named), and where a GPU reports all its links inactive.
"""
from __future__ import annotations

from ..health import nvlink
from .base import Metric, failure, success

TOOL = 'nvlink'


def _gpu_details(links: nvlink.Links) -> dict:
    return {'name': links.name, 'uuid': links.uuid,
            'active': links.active, 'inactive': links.inactive,
            'all_inactive': links.all_inactive,
            'speeds_gbs': {str(k): v for k, v in sorted(links.speeds.items())},
            'errors': links.error_totals()}


def parse(text: str):
    output = nvlink.read(text.splitlines())
    if not output.gpus:
        return failure(TOOL, "not nvlink output: no nvidia-smi nvlink 'GPU N: NAME "
                       "(UUID: ...)' heading")
    gpus = output.gpus
    metrics = {'gpus': Metric(float(len(gpus)), 'GPUs')}
    status = [g for g in gpus.values() if g.has_status()]
    if status:
        metrics['links_active'] = Metric(
            float(sum(len(g.active) for g in status)), 'links')
        metrics['links_inactive'] = Metric(
            float(sum(len(g.inactive) for g in status)), 'links')
        metrics['links_active_min'] = Metric(
            float(min(len(g.active) for g in status)), 'links')
        speeds = [s for g in status for s in g.speeds.values()]
        if speeds:
            metrics['link_speed_min'] = Metric(min(speeds), 'GB/s')
    totals: dict[str, int] = {}
    for links in gpus.values():
        for name, count in links.error_totals().items():
            totals[name] = totals.get(name, 0) + count
    for name, count in sorted(totals.items()):
        metrics[name] = Metric(float(count), 'count')
    details = {'gpus': {str(i): _gpu_details(g)
                        for i, g in sorted(gpus.items())}}
    problems = [f'line {number} is not an NVLink line: {line[:60]!r} (the '
                'output is not whole)' for number, line in output.unread[:3]]
    problems += [f'GPU {i}: {g.problem()}' for i, g in sorted(gpus.items())
                 if g.problem()]
    if problems:
        return failure(TOOL, '; '.join(problems), metrics, details)
    return success(TOOL, metrics, details)
