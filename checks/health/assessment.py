"""Two samples of one node (before and after a test) -> rows and findings.

Rows (what a job adds to the table, per node):
- one summary row per device (HCA port, GPU): ``check_perf_var = health``,
  the number of health findings on it (0 = healthy, ``pass``), its state in
  ``check_params``;
- one row per counter that changed (the delta), and per judged state that
  is wrong (an IB port below its rate, a PCIe link below its width);
- one ``health_not_available`` row when a source could not be read (no
  InfiniBand, no nvidia-smi, a log that is not readable): informational.
Findings are what the rules (checks/references/health.yaml) say fail a node
('fail') or are worth naming in the check's own verdict ('warn').
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import gpu, infiniband, kernel_log, nvlink
from .dump import Dump

SUMMARY_METRIC = 'health'
NOT_AVAILABLE_METRIC = 'health_not_available'
FAIL, WARN, RECORD = 'fail', 'warn', 'record'
# Rules about states, not counters (checks/references/health.yaml)
_IB_STATES = ('port_state', 'port_rate', 'link_flaps')


@dataclass
class Finding:
    node: str
    device: str
    metric: str
    severity: str  # fail or warn
    reason: str
    value: float | None = None
    reference: float | None = None
    source: str = ''
    #: the GPU a finding is about: index, bus id, serial
    #: (records.gpu_columns; acceptance names it)
    gpu: dict | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Row:
    """One health row of one node: the perf record fields it differs by."""
    node: str
    device: str | None
    metric: str
    value: float | None
    unit: str
    result: str  # pass, fail, no_reference, informational
    reference: float | None = None
    reason: str = ''
    source: str = ''
    params: dict = field(default_factory=dict)
    #: the GPU a row is about: index, bus id, serial (gpu_columns of
    #: config/results/rows/builder.py)
    gpu: dict | None = None


@dataclass
class Nominal:
    """What the node's SKU should show (None = not judged)."""
    ib_rate_gbps: float | None = None
    ib_rate_source: str = ''
    pcie_width: int | None = None
    pcie_gen: int | None = None
    pcie_source: str = ''
    #: each GPU's NVLinks: how many, and each one's speed (GB/s)
    nvlink_links: int | None = None
    nvlink_gbps: float | None = None
    nvlink_source: str = ''


@dataclass
class Assessment:
    rows: list[Row] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    not_available: dict[str, str] = field(default_factory=dict)


def _rule(rules: dict, family: str, name: str) -> tuple[str, str]:
    spec = rules.get(family, {}).get(name)
    if not isinstance(spec, dict):
        return '', ''
    source = spec.get('source', '')
    return spec.get('rule', RECORD), rules.get('sources', {}).get(source,
                                                                  source)


class _Node:
    """Collects one node's rows and findings device by device."""

    def __init__(self, node: str, rules: dict):
        self.node, self.rules = node, rules
        self.result = Assessment()

    def counter(self, family, device, name, before, after, what=None):
        if before is None or after is None or after == before:
            return []
        rule, source = _rule(self.rules, family, name)
        delta = after - before
        if delta < 0:
            reason = f'{name} went from {before} to {after} (reset)'
        else:
            reason = f'{name} +{delta} during the test'
        failed = rule == FAIL and delta > 0
        self.result.rows.append(Row(
            self.node, device, name, delta, 'count',
            'fail' if failed else 'no_reference',
            reference=0 if rule == FAIL else None,
            reason=f'{what or device}: {reason}', source=source))
        if failed:
            return [Finding(self.node, device, name, FAIL,
                            f'{what or device}: {reason}', delta, 0, source)]
        return []

    def state(self, family, device, name, value, reference, unit, reason,
              source=None):
        """A judged state that is wrong: a failing row and a finding."""
        rule, rule_source = _rule(self.rules, family, name)
        source = source or rule_source
        if rule != FAIL:
            return []
        self.result.rows.append(Row(self.node, device, name, value, unit,
                                    'fail', reference, reason, source))
        return [Finding(self.node, device, name, FAIL, reason, value,
                        reference, source)]

    def summary(self, device, found, params):
        failed = [f for f in found if f.severity == FAIL]
        self.result.findings += found
        self.result.rows.append(Row(
            self.node, device, SUMMARY_METRIC, len(failed), 'findings',
            'fail' if failed else 'pass', reference=0,
            reason='; '.join(f.reason for f in found), params=params))


def _ib(node: _Node, before: infiniband.Sample, after: infiniband.Sample,
        flaps: dict[str, int], nominal: Nominal):
    counters = [name for name in node.rules.get('infiniband', {})
                if name not in _IB_STATES]
    for device, port in sorted(after.ports.items()):
        old = before.ports.get(device)
        found = []
        for name in counters:
            found += node.counter('infiniband', device, name,
                                  old.counters.get(name) if old else None,
                                  port.counters.get(name))
        if port.state and port.state != 'ACTIVE':
            found += node.state('infiniband', device, 'port_state', None,
                                None, '', f'{device}: port {port.state}')
        infiniband_port = (port.link_layer or 'InfiniBand') == 'InfiniBand'
        if infiniband_port and nominal.ib_rate_gbps and \
                port.rate_gbps is not None and \
                port.rate_gbps < nominal.ib_rate_gbps:
            found += node.state(
                'infiniband', device, 'port_rate', port.rate_gbps,
                nominal.ib_rate_gbps, 'Gb/s',
                f'{device}: port at {port.rate_gbps:g} Gb/s, below the '
                f"SKU's {nominal.ib_rate_gbps:g} Gb/s",
                source=nominal.ib_rate_source)
        node.summary(device, found, {
            'state': port.state, 'rate_gbps': port.rate_gbps,
            'link_layer': port.link_layer,
            'firmware': after.firmware.get(port.hca)})
    for netdev, count in sorted(flaps.items()):
        found = node.counter('infiniband', netdev, 'link_flaps', 0, count,
                             what=f'{netdev} lost carrier')
        node.result.findings += found


def _gpu_events(node: _Node, old: gpu.Gpu | None, new: gpu.Gpu) -> list:
    """Clock events (throttling) that are not benign: time spent in them
    during the test (v13 counters), else active in a sample: 'warn'."""
    benign = set(node.rules.get('benign_clock_events', []))
    rule, source = _rule(node.rules, 'gpu', 'clock_event_active')
    if rule not in (FAIL, WARN):
        return []
    found, timed = [], set()
    for name, after_us in sorted(new.clock_event_us.items()):
        before_us = (old.clock_event_us.get(name) if old else None)
        if name in benign or before_us is None or after_us <= before_us:
            continue
        timed.add(name)
        seconds = (after_us - before_us) / 1e6
        found.append(Finding(node.node, new.device, f'clock_event_{name}',
                             rule, f'GPU {new.index} {name.replace("_", " ")}'
                             f' for {seconds:g} s during the run', seconds,
                             0, source))
    active = set(new.clock_events) | set(old.clock_events if old else [])
    for name in sorted(active - benign - timed):
        found.append(Finding(node.node, new.device, f'clock_event_{name}',
                             rule, f'GPU {new.index} {name.replace("_", " ")}'
                             ' active during the run', None, None, source))
    return found


def _pcie(node: _Node, new: gpu.Gpu, nominal: Nominal) -> list:
    """The link's width and maximum generation against the SKU's."""
    found = []
    for metric, want, unit, said in (
            ('pcie_link_width', nominal.pcie_width, 'lanes', 'x{:g}'),
            ('pcie_link_gen_max', nominal.pcie_gen, 'generation',
             'at most gen {:g}')):
        have = new.gauges.get(metric)
        if want and have is not None and have < want:
            found += node.state(
                'gpu', new.device, metric, have, want, unit,
                f'GPU {new.index} PCIe link {said.format(have)}, below '
                f'{said.format(want).replace("at most ", "")}',
                source=nominal.pcie_source)
    return found


def _xids(node: _Node, device: str, what: str, xids: list[kernel_log.Xid],
          errors: set) -> list:
    """An XID of the error class is a finding; any other is recorded."""
    found = []
    for xid in xids:
        reason = f'{what} XID {xid.code}: {xid.line[-160:]}'
        if xid.code in errors:
            found += node.state('gpu', device, 'xid_error', xid.code, None,
                                'xid', reason)
        else:
            node.result.rows.append(Row(node.node, device, 'xid', xid.code,
                                        'xid', 'no_reference',
                                        reason=reason))
    return found


def nvlink_state(node: _Node, device: str, index: int,
                 links: nvlink.Links, nominal: Nominal) -> list:
    """A GPU's NVLinks against its SKU's: every link up (a link named
    inactive, or fewer links up than the SKU has) and each link at the
    SKU's speed; the link is named."""
    if not links.has_status():
        return []
    problem = links.problem()
    found = []
    if problem:
        found += node.state('gpu', device, 'nvlink_inactive',
                            len(links.inactive) or None, 0, 'links',
                            f'GPU {index} {problem}')
    want = nominal.nvlink_links
    if want and not links.all_inactive and not links.inactive and \
            len(links.active) < want:
        found += node.state(
            'gpu', device, 'nvlink_links_up', len(links.active), want,
            'links', f'GPU {index} NVLink: {len(links.active)} of {want} '
            'links up', source=nominal.nvlink_source)
    speed = nominal.nvlink_gbps
    slow = sorted(link for link, gbps in links.speeds.items()
                  if speed and gbps < speed * 0.999)
    if slow:
        found += node.state(
            'gpu', device, 'nvlink_link_speed',
            min(links.speeds[link] for link in slow), speed, 'GB/s',
            f'GPU {index} NVLink ' + ', '.join(
                f'{link} at {links.speeds[link]:g} GB/s' for link in slow)
            + f', below {speed:g} GB/s', source=nominal.nvlink_source)
    return found


def _nvlink_errors(node: _Node, new: gpu.Gpu, old: nvlink.Links | None,
                   links: nvlink.Links) -> list:
    """The rise of each ``nvidia-smi nvlink -e`` counter during the test,
    summed over the GPU's links."""
    if old is None:
        return []
    before, after = old.error_totals(), links.error_totals()
    found = []
    for name, count in sorted(after.items()):
        found += node.counter('gpu', new.device, f'nvlink_{name}',
                              before.get(name), count,
                              what=f'GPU {new.index} NVLink')
    return found


def _gpus(node: _Node, before: gpu.Sample, after: gpu.Sample,
          xids: list[kernel_log.Xid], links: dict[int, nvlink.Links],
          nominal: Nominal, before_links: dict[int, nvlink.Links] = None):
    before_links = before_links or {}
    errors = set(node.rules.get('xid_error_class', []))
    pci_ids = [g.pci for g in after.gpus]
    by_gpu: dict[int | None, list[kernel_log.Xid]] = {}
    for xid in xids:
        by_gpu.setdefault(kernel_log.gpu_of_xid(xid, pci_ids), []).append(xid)
    for new in after.gpus:
        old = next((g for g in before.gpus if g.pci == new.pci), None)
        found = []
        for name, value in new.counts.items():
            found += node.counter('gpu', new.device, name,
                                  old.counts.get(name) if old else None,
                                  value, what=f'GPU {new.index}')
        for name, value in new.flags.items():
            if value:
                was = bool(old and old.flags.get(name))
                found += node.state(
                    'gpu', new.device, name, 1, 0, 'flag',
                    f'GPU {new.index} {name.replace("_", " ")}'
                    + (' (already before the test)' if was else ''))
        found += _pcie(node, new, nominal)
        found += _xids(node, new.device, f'GPU {new.index}',
                       by_gpu.get(new.index, []), errors)
        if new.index in links:
            found += nvlink_state(node, new.device, new.index,
                                  links[new.index], nominal)
            found += _nvlink_errors(node, new, before_links.get(new.index),
                                    links[new.index])
        found += _gpu_events(node, old, new)
        node.summary(new.device, found, {
            'pci': new.pci, 'vbios': new.vbios,
            'clock_events_active': new.clock_events,
            'nvlink_active': len(links[new.index].active)
            if new.index in links else None,
            **{k: v for k, v in new.gauges.items() if v is not None},
            'temperature_c_before': old.gauges.get('temperature_c')
            if old else None})
    for xid in by_gpu.get(None, []):
        node.result.findings += _xids(node, f'pci {xid.pci}',
                                      f'PCI {xid.pci}', [xid], errors)
    named = {g.device: g.identity() for g in after.gpus}
    for item in node.result.rows + node.result.findings:
        if item.device in named:
            item.gpu = named[item.device]


def _links(dump: Dump) -> dict[int, nvlink.Links]:
    """Each GPU's links (nvlink -s) with its error counters (nvlink -e)."""
    links = nvlink.parse(dump.lines('nvlink'))
    for index, counted in nvlink.parse(dump.lines('nvlink-errors')).items():
        links.setdefault(index, nvlink.Links()).errors = counted.errors
    return links


def _parsed(dump: Dump, name: str, parser, empty):
    try:
        return parser(dump.text(name)), None
    except ValueError as error:
        return empty, str(error)


def assess(node: str, before: Dump | None, after: Dump | None, rules: dict,
           nominal: Nominal) -> Assessment:
    """Rows and findings of one node for one test."""
    collected = _Node(node, rules)
    result = collected.result
    if before is None or after is None:
        missing = 'before' if before is None else 'after'
        result.not_available['sample'] = f'no {missing} sample on {node}'
    else:
        for dump in (before, after):
            result.not_available.update(dump.missing)
        ib_old = infiniband.parse(before.lines('infiniband'))
        ib_new = infiniband.parse(after.lines('infiniband'))
        log = after.lines('log')
        _ib(collected, ib_old, ib_new, kernel_log.link_flaps(log), nominal)
        if 'gpu' not in result.not_available:
            gpu_old, err_old = _parsed(before, 'nvidia-smi', gpu.parse,
                                       gpu.Sample())
            gpu_new, err_new = _parsed(after, 'nvidia-smi', gpu.parse,
                                       gpu.Sample())
            if err_old or err_new:
                result.not_available['gpu'] = err_new or err_old
            else:
                _gpus(collected, gpu_old, gpu_new, kernel_log.xids(log),
                      _links(after), nominal, _links(before))
    if result.not_available:
        reason = '; '.join(f'{source}: {why}' for source, why in
                           sorted(result.not_available.items()))
        result.rows.append(Row(node, None, NOT_AVAILABLE_METRIC,
                               len(result.not_available), 'sources',
                               'informational',
                               reason=f'not available: {reason}'))
    return result
