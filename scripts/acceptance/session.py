"""One acceptance run: list nodes, run ReFrame per scope, judge, drain,
summarise, ship."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from checks.common import fan_out
from checks.common.launch import SLURM_SCHEDULERS
from config.results.azure import ingestion
from config.results.store import sessions, files as store
from scripts.guest_health import follow_up
from scripts.guest_health import reporting as guest_health
from scripts.comparison import baseline, peers

from . import (block_topology, compare, confirm, health, nvlink, plan, repair,
               resume, sku_mismatch, slurm, summary, verdicts)
from . import power_up as powering
from .findings import PEERS, SITE_BASELINE

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / 'config' / 'config.py'
DEFAULT_DRAIN_FRACTION = 0.1

EXIT_GOOD, EXIT_FINDINGS, EXIT_BROKEN = 0, 1, 2
#: Node verdicts that leave the exit status 0: a flaky node passed when
#: measured again, and a not-judged one has no basis to fail it.
QUIET_VERDICTS = (verdicts.GOOD, verdicts.FLAKY, verdicts.NOT_JUDGED)


class RunBroken(RuntimeError):
    """The run itself failed (scheduler, configuration): nobody is blamed."""


class UnknownPartition(ValueError):
    """--partition names a partition the system does not have."""

    def __init__(self, system: str, unknown: list[str], known: list[str]):
        super().__init__(f'no partition {", ".join(unknown)} in system '
                         f'{system} (it has: {", ".join(known)})')
        self.system, self.unknown, self.known = system, unknown, known


@dataclass
class Options:
    selection: plan.Selection
    system: str | None = None
    partitions: list[str] = field(default_factory=list)
    retries: int = 0
    drain: bool = False
    dry_run: bool = False
    max_drain: int | None = None
    #: Let Slurm start powered-down nodes for the run, at most this many.
    power_up: bool = False
    max_power_up: int = powering.DEFAULT_MAX
    peer_rules: peers.Rules = field(default_factory=peers.Rules)
    baselines: baseline.Layer = field(default_factory=baseline.Layer)
    #: confirmation sessions of what a bad node failed (--confirm): a
    #: failure that does not repeat is flaky, and only a confirmed bad node
    #: is drained or reported
    confirm: int = 1
    #: a suspect pair runs again, each node with a good partner
    repair_suspects: bool = True
    #: test the nodes clusterproof drained, in a reservation; resume the
    #: good ones, drain the others again (resume.py)
    resume: bool = False
    #: nodes per job of the checks that run on each node of a batch job
    node_batch: int = plan.NODE_BATCH
    #: one Guest Health Report per confirmed bad node (scripts/guest_health)
    report_to_azure: bool = False
    max_reports: int | None = None


def reframe_command() -> list[str]:
    beside = Path(sys.executable).parent / 'reframe'
    program = str(beside) if beside.exists() else (shutil.which('reframe')
                                                  or 'reframe')
    return [program, '-C', str(CONFIG)]


def _show_config(system: str | None, path: str):
    argv = reframe_command() + (['--system', system] if system else []) + \
        ['--show-config', path]
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=300, stdin=subprocess.DEVNULL)
    text = result.stdout
    start = min((i for i in (text.find('['), text.find('{'), text.find('"'))
                 if i >= 0), default=-1)
    if result.returncode != 0 or start < 0:
        raise RunBroken(f'ReFrame could not load {CONFIG}: '
                        f'{(result.stderr or result.stdout).strip()[-2000:]}')
    return json.loads(text[start:])


def system_partitions(system: str | None) -> tuple[str, list[dict]]:
    return (_show_config(system, 'systems/0/name'),
            _show_config(system, 'systems/0/partitions'))


@dataclass
class PhaseResult:
    phase: plan.Phase
    cases: list[dict]
    skipped: dict[str, str]
    log: Path
    report: Path | None = None
    reframe_session_uuid: str | None = None
    store_session_id: str | None = None

    def as_dict(self) -> dict:
        return {'phase': self.phase.label, 'log': str(self.log),
                'report': str(self.report) if self.report else None,
                'reframe_session_uuid': self.reframe_session_uuid,
                'store_session_id': self.store_session_id}


def store_session_of(reframe_uuid: str | None) -> str | None:
    """The store session whose rows that ReFrame session wrote."""
    if not reframe_uuid:
        return None
    return next((entry['session_id'] for entry in
                 sessions.read_map().values()
                 if entry.get('reframe_session_uuid') == reframe_uuid), None)


def run_phase(phase: plan.Phase, options: Options, workdir: Path,
              say) -> PhaseResult:
    report = workdir / f'{phase.label}.report.json'
    log = workdir / f'{phase.label}.log'
    # a second run of a scope (confirm, re-pair) has the same test hashes:
    # its own prefix keeps the first run's stage and output directories
    prefix = workdir / ('reframe-' + phase.label if phase.rerun
                        else 'reframe')
    argv = reframe_command() + plan.reframe_options(
        phase, options.selection, str(report), str(prefix), options.retries)
    say(f'running {phase.scope} checks on {phase.system}:{phase.partition}'
        + (f' ({len(phase.pins)} job sets)' if phase.pins else '')
        + (f', batch {phase.batch} of {phase.batches}'
           if phase.batches > 1 else ''))
    with open(log, 'w') as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                text=True, stdin=subprocess.DEVNULL)
    text = log.read_text(errors='replace')
    if result.returncode == 0 and not report.exists():
        data = {}  # nothing selected: ReFrame writes no report then
    else:
        data = _read_report(report, result.returncode, log)
    cases = verdicts.final_cases(data)
    uuid = data.get('session_info', {}).get('uuid')
    stored = store_session_of(uuid)
    say(f'  {len(cases)} test case(s); ReFrame output in {log}'
        + (f'; rows in store session {stored} (ReFrame session {uuid})'
           if stored else ''))
    return PhaseResult(phase, cases, verdicts.skip_reasons(text), log,
                       report if data else None, uuid, stored)


def unkept(log: Path) -> list[str]:
    """The store's end lines in a phase's output that name rows it could
    not write (config/results/handlers/store_handler.py)."""
    try:
        text = log.read_text(errors='replace')
    except OSError:
        return []
    return [line.strip() for line in text.splitlines()
            if store.UNSTORED_MARK in line]


def _read_report(report: Path, returncode: int, log: Path) -> dict:
    try:
        return json.loads(report.read_text())
    except (OSError, ValueError):
        raise RunBroken(f'ReFrame wrote no run report {report.name} '
                        f'(exit {returncode}); see {log}') from None


REFERENCE_WORDS = {PEERS: "peers' median", SITE_BASELINE: 'site baseline'}


def _drain_reason(verdict: verdicts.NodeVerdict) -> str:
    worst = verdict.worst_findings()[0]
    if worst.metric:
        unit = f' {worst.unit}' if worst.unit else ''
        against = REFERENCE_WORDS.get(worst.basis, 'ref')
        what = (f'{worst.metric}={worst.value:g}{unit} {against} '
                f'{worst.reference:g}{unit}') if worst.value is not None \
            and worst.reference is not None else worst.metric
    else:
        what = ' '.join(worst.reason.split())[:120]
    return f'{resume.DRAIN_PREFIX} {worst.check} {what}'


def plan_drains(node_verdicts, max_drain: int | None,
                slurm_partitions: set[str]) -> tuple[list[dict], list[str]]:
    """(nodes to drain with their reason, notes). Only a confirmed bad
    node is drained: one whose failure failed again when measured again
    (--confirm); never a flaky, not-judged or unconfirmed one."""
    measured = [v for v in node_verdicts
                if v.partition in slurm_partitions]
    unconfirmed = [v.node for v in measured
                   if v.verdict == verdicts.BAD and not v.confirmed]
    notes = [f'not drained, bad but not confirmed (measured once; '
             f'--confirm N measures again before a drain): '
             f'{", ".join(unconfirmed)}'] if unconfirmed else []
    bad = [v for v in measured if v.verdict == verdicts.BAD and v.confirmed]
    limit = max_drain if max_drain is not None else max(
        1, int(len(measured) * DEFAULT_DRAIN_FRACTION))
    if len(bad) > limit:
        return [], notes + [
            f'{len(bad)} bad nodes is more than --max-drain {limit}: '
            'nothing drained (a wrong reference must not drain the '
            'cluster); check the references, or raise --max-drain']
    return [{'node': v.node, 'reason': _drain_reason(v)} for v in bad], notes


def apply_drains(drains: list[dict], dry_run: bool, say) -> None:
    for entry in drains:
        command = slurm.drain_command(entry['node'], entry['reason'])
        if dry_run:
            say('would run: ' + ' '.join(
                c if ' ' not in c else repr(c) for c in command))
            entry['done'] = False
            continue
        try:
            slurm.drain(entry['node'], entry['reason'])
        except slurm.SchedulerError as error:
            entry['done'], entry['error'] = False, str(error)
            say(f"could not drain {entry['node']}: {error}")
            continue
        entry['done'] = True
        say(f"drained {entry['node']}: {entry['reason']}")


def ship_results(say) -> str:
    """`clusterproof sync` when Azure is configured; else nothing."""
    if ingestion.settings() is None:
        say('Azure Log Analytics not configured: results stay in the local '
            f'store ({store.results_dir()})')
        return 'not configured'
    from scripts.cli import main as cli
    if 'sync' not in cli.SUBCOMMANDS:
        say('this clusterproof has no sync command: results stay in the '
            'local store')
        return 'no sync command'
    status = cli.main(['sync'])
    return {0: 'shipped', 1: 'partly shipped'}.get(
        status, 'refused: fix the Log Analytics settings')


def _inventory(options: Options, say):
    system, partitions = system_partitions(options.system)
    known = {p['name']: p for p in partitions}
    unknown = [p for p in options.partitions if p not in known]
    if unknown:
        raise UnknownPartition(system, unknown, list(known))
    chosen = [known[p] for p in (options.partitions or known)]
    nodes, phases, notes, started, mnnvl = {}, [], [], {}, set()
    one_at_a_time = set()
    budget = options.max_power_up
    for part in chosen:
        fullname = f"{system}:{part['name']}"
        scheduler = part.get('scheduler')
        if scheduler not in SLURM_SCHEDULERS:
            notes.append(f'{fullname} uses scheduler {scheduler!r}: only '
                         'Slurm can list nodes, so its checks run once, not '
                         'per node, and nothing there is drained')
            phases += plan.phases(system, part['name'], None)
            continue
        slurm_partition = slurm.partition_from_access(part.get('access', []))
        if not slurm_partition:
            raise RunBroken(f'{fullname} names no Slurm partition in its '
                            'access options (--partition=...)')
        try:
            slurm.check_controller()
            states = slurm.node_states(slurm_partition) \
                if not options.resume else {
                    n: 'idle' for n in resume.our_drains(
                        slurm.node_reasons(slurm_partition))}
        except slurm.SchedulerError as error:
            raise RunBroken(str(error)) from None
        nodes[fullname] = states
        if part.get('extras', {}).get('nccl_multinode_fabric') == 'mnnvl':
            mnnvl.add(part['name'])
        if part.get('extras', {}).get(fan_out.AT_ONCE) == 1:
            one_at_a_time.add(part['name'])
        starting = powering.choose(states, options.power_up, budget)
        budget -= len(starting)
        if starting:
            started[fullname] = starting
        usable = [n for n, s in states.items()
                  if slurm.is_usable(s) or n in starting]
        planned = plan.phases(system, part['name'], usable,
                              options.node_batch, plan.left_out(part))
        if options.resume:   # only its drained nodes, nothing else
            phases += [p for p in planned if usable and p.scope != 'whole']
            continue
        phases += planned
    if started:
        notes += powering.cost_lines(started, nodes,
                                     powering.read_suspend_time_s())
    for note in notes:
        say(note)
    return nodes, phases, notes, mnnvl, frozenset(one_at_a_time)


def _once(function):
    """function(), called the first time it is needed, then remembered."""
    memo = []

    def value():
        if not memo:
            memo.append(function())
        return memo[0]
    return value


def _record_session(session_id: str, rows_file: Path | None, rows: int,
                    results: list[PhaseResult], summary_path: Path) -> None:
    """The acceptance in the session map: the ReFrame sessions it ran, its
    summary, and its own rows (verdicts, not-measured findings) where it
    stored any (a run of good nodes stores none)."""
    uuids = [r.reframe_session_uuid for r in results if r.reframe_session_uuid]
    reports = [str(r.report) for r in results if r.report]
    sessions.record({
        'session_id': session_id,
        'reframe_session_uuid': uuids[0] if len(uuids) == 1 else None,
        'report_file': reports[0] if len(reports) == 1 else None,
        'reframe_sessions': uuids, 'report_files': reports,
        'acceptance_summary': str(summary_path),
        'store_file': str(rows_file) if rows_file else None,
        'rows': rows,
    })


def _judge_after_run(results: list[PhaseResult], findings: list,
                     started: float, options: Options) -> list:
    """Peers, site baseline and common mode, from the rows the phases
    stored; adds to *findings* and returns the verdicts decided (for the
    verdict rows)."""
    jobids = {str(case['jobid']) for result in results
              for case in result.cases if case.get('jobid')}
    rows = compare.rows_of_run(jobids, started)
    compare.link_rows(findings, rows)
    decided = compare.peer_judgements(rows, options.peer_rules) + \
        compare.sibling_judgements(rows) + \
        compare.baseline_judgements(rows, options.baselines)
    findings += compare.failing_findings(decided, findings)
    findings += compare.not_judged_findings(decided, findings)
    findings += compare.shared_failures(findings)
    return decided


def _targets(nodes: dict) -> set[tuple[str, str]]:
    return {(part, node) for part, states in nodes.items() for node in states}


def _hold_drained(nodes: dict, session_id: str, options: Options,
                  say) -> str | None:
    """Reserve and resume the nodes clusterproof drained; their jobs run
    in the reservation (ReFrame -J reservation=...)."""
    targets = sorted(node for _, node in _targets(nodes))
    if not targets:
        say(f'--resume: no node drained by clusterproof '
            f'("{resume.DRAIN_PREFIX} ...") is idle')
        return None
    name = resume.reservation_name(session_id)
    try:
        resume.hold(name, targets, say)
    except slurm.SchedulerError as error:
        raise RunBroken(f'--resume: {error}') from None
    options.selection.extra[:0] = ['-J', f'reservation={name}']
    return name


def _measure_again(results: list[PhaseResult], started: float,
                   options: Options) -> tuple[list, list]:
    """The findings of confirmation sessions, with their baseline
    verdicts (their peers are the first run's: confirm.py)."""
    findings = [f for result in results for case in result.cases
                for f in verdicts.case_findings(case, result.skipped)]
    jobids = {str(case['jobid']) for result in results
              for case in result.cases if case.get('jobid')}
    rows = compare.rows_of_run(jobids, started)
    compare.link_rows(findings, rows)
    decided = compare.baseline_judgements(rows, options.baselines)
    return findings + compare.failing_findings(decided, findings), decided, \
        rows


def run(options: Options, say=print) -> int:
    session_id = store.new_session_id()
    workdir = store.home() / 'acceptance' / session_id
    workdir.mkdir(parents=True, exist_ok=True)
    broken, findings, nodes, notes, drains = [], [], {}, [], []
    results, rows_file, stored = [], None, []
    judgements, started, reservation = [], time.time(), None
    azure_reports, cost = None, None
    try:
        nodes, phases, notes, mnnvl, one_at_a_time = _inventory(options, say)
        if options.resume:
            reservation = _hold_drained(nodes, session_id, options, say)
        blocks = _once(block_topology.read_blocks)
        results = []
        for phase in phases:  # node phases first: they record NVLink domains
            domains = nvlink.domains_so_far(
                results, phase, blocks if phase.partition in mnnvl else None)
            for part in nvlink.split_set_phase(phase, domains):
                results.append(run_phase(part, options, workdir, say))
        broken += [f'results not kept: {line} (see {result.log})'
                   for result in results for line in unkept(result.log)]
        for result in results:
            broken += verdicts.scheduler_trouble(result.cases)
            found = []
            for case in result.cases:
                found += verdicts.case_findings(case, result.skipped)
            nvlink.label_findings(result.phase, found)
            findings += found + sku_mismatch.findings(result.cases)
        judgements = _judge_after_run(results, findings, started, options)
        if options.repair_suspects and nodes:
            repair.repair(
                findings, nodes,
                lambda phase: run_phase(phase, options, workdir, say),
                lambda again: _measure_again(again, started, options)[0], say)
        if options.confirm and nodes:
            cost = confirm.Cost()
            judgements += confirm.confirm(
                options.confirm, findings, judgements, nodes,
                lambda phase: run_phase(phase, options, workdir, say),
                lambda again: _measure_again(again, started, options), say,
                cost, one_at_a_time)
            if cost.sessions:
                say(cost.line())
        health.name_concurrent_after(
            findings, [case for r in results for case in r.cases])
        if nodes:
            slurm.check_controller()
    except (RunBroken, slurm.SchedulerError) as error:
        broken.append(str(error))
    node_verdicts = verdicts.node_verdicts(findings, nodes)
    partition_findings = verdicts.partition_findings(findings)
    if broken:
        code = EXIT_BROKEN
        say('the run itself broke; no node is judged:')
        for reason in broken:
            say(f'  {reason}')
    else:
        code = EXIT_GOOD if all(v.verdict in QUIET_VERDICTS
                                for v in node_verdicts) \
            and not partition_findings else EXIT_FINDINGS
        for line in summary.table_lines(
                node_verdicts, partition_findings,
                summary.whole_partition_passes(findings)):
            say(line)
        for line in summary.apart_lines(node_verdicts, options.confirm):
            say(line)
        if options.report_to_azure and not options.resume:
            azure_reports = guest_health.report(
                node_verdicts, session_id, guest_health.utc_text(started),
                options.max_reports, options.dry_run, say)
        if options.resume:
            drains = resume.still_bad(node_verdicts, _targets(nodes),
                                      _drain_reason)
            apply_drains(drains, False, say)
            azure_reports = follow_up.close_passing(
                node_verdicts, _targets(nodes), reservation, session_id, say)
        elif options.drain:
            drains, drain_notes = plan_drains(node_verdicts,
                                              options.max_drain, set(nodes))
            notes += drain_notes
            for note in drain_notes:
                say(note)
            apply_drains(drains, options.dry_run, say)
        stored = (summary.not_measured_rows(node_verdicts, partition_findings,
                                            session_id)
                  + summary.shared_failure_rows(partition_findings, session_id)
                  + compare.verdict_rows(judgements, session_id, findings)
                  + guest_health.rows(azure_reports, session_id,
                                      summary.ROW_FACILITY))
        rows_file = summary.store_rows(stored, session_id)
        if rows_file:
            say(f'findings and verdicts stored in {rows_file}')
    if broken and reservation:
        # what was resumed to be tested goes back to drain
        drains = [{'node': node, 'reason': f'{resume.DRAIN_PREFIX} --resume '
                   'could not test it (the run broke)'}
                  for _, node in sorted(_targets(nodes))]
        apply_drains(drains, False, say)
    if reservation:
        try:
            slurm.release(reservation)
            say(f'reservation {reservation} deleted')
        except slurm.SchedulerError as error:
            say(f'could not delete reservation {reservation}: {error}')
    document = summary.summary_document(
        session_id, code, [] if broken else node_verdicts,
        [] if broken else partition_findings, broken, drains, notes,
        [] if broken else findings)
    document['phases'] = [result.as_dict() for result in results]
    if cost is not None:
        document['confirmation'] = {'attempts': options.confirm,
                                    **cost.as_dict()}
    if azure_reports is not None:
        document['azure_reports'] = azure_reports
    document['sync'] = ship_results(say)
    path = summary.write_summary(document, workdir)
    if rows_file or results:
        _record_session(session_id, rows_file, len(stored), results, path)
    say(summary.count_line(document['counts']['nodes'],
                           document['counts']['checks']))
    say(f'summary: {path}')
    return code
