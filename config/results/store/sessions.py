"""The end of a ReFrame session, seen from the local store: what it stored,
where, and which of ReFrame's own sessions it was.

A store session id names the rows; ReFrame's session UUID (the one
``reframe --list-stored-sessions`` and ``--performance-compare`` use) exists
only in ReFrame's run report, which is written just before exit. At exit the
store handler finds that report by the (test name, job id) pairs it stored,
and appends one line to ``$CLUSTERPROOF_HOME/sessions.jsonl``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from . import files as store

MAP_FILE = 'sessions.jsonl'


def reports_dir() -> Path:
    return store.home() / 'reports'


def _report_jobs(report: dict) -> set[tuple[str, str]]:
    jobs = set()
    for run in report.get('runs', []):
        for case in run.get('testcases', []):
            jobid = case.get('jobid')
            if jobid is None:
                continue
            for key in ('name', 'unique_name', 'display_name'):
                if case.get(key):
                    jobs.add((str(case[key]), str(jobid)))
    return jobs


def configured_report_files() -> list[Path]:
    """The run report this ReFrame process was told to write with
    ``--report-file`` (as `clusterproof acceptance` does), when it is a
    fixed path; [] outside ReFrame or for the default pattern."""
    try:
        from reframe.core.runtime import runtime
        path = runtime().get_option('general/0/report_file')
    except Exception:   # not inside a ReFrame session
        return []
    if not path or '{' in str(path):
        return []
    return [Path(os.path.expandvars(str(path))).absolute()]


def find_reframe_session(jobs: set[tuple[str, str]], since: float,
                         directory: Path | None = None,
                         extra: list[Path] = ()) -> tuple[str, Path] | None:
    """(UUID, report file) of the ReFrame session whose report, written
    after ``since`` (a time.time()), ran one of ``jobs`` ((check name, job id)
    pairs); None when no report matches. ``extra``: report files outside
    ``directory`` to consider too."""
    directory = directory or reports_dir()
    if not jobs:
        return None
    paths = list(directory.glob('run-report-*.json')) \
        if directory.is_dir() else []
    candidates = []
    for path in paths + [Path(p) for p in extra]:
        try:
            if path.is_symlink() or path.stat().st_mtime < since:
                continue
        except OSError:
            continue
        candidates.append(path)
    for path in sorted(candidates, key=lambda p: p.stat().st_mtime,
                       reverse=True):
        try:
            with open(path) as fp:
                report = json.load(fp)
        except (OSError, ValueError):
            continue
        if _report_jobs(report) & jobs:
            uuid = report.get('session_info', {}).get('uuid')
            if uuid:
                return uuid, path
    return None


def record(entry: dict) -> Path:
    """Append one session's entry to the map; returns the map's path."""
    path = store.home() / MAP_FILE
    with open(path, 'a') as fp:
        fp.write(json.dumps(entry, separators=(',', ':')) + '\n')
        fp.flush()
        os.fsync(fp.fileno())
    return path


def read_map() -> dict[str, dict]:
    """Store session id -> its entry (ReFrame UUID, report, store file)."""
    path = store.home() / MAP_FILE
    entries = {}
    if not path.is_file():
        return entries
    with open(path, errors='replace') as fp:
        for line in fp:
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, dict):
                entries[entry.get('session_id')] = entry
    return entries
