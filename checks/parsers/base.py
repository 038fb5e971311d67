"""What every parser returns, and the small helpers parsers share.

A parser is a pure function ``parse(text: str) -> ParseResult``. It never
raises on bad input: a truncated, failed or foreign output gives
``ok=False`` with a reason that names what is missing or wrong.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Metric:
    value: float
    unit: str


@dataclass
class ParseResult:
    tool: str
    ok: bool
    reason: str | None = None
    metrics: dict[str, Metric] = field(default_factory=dict)
    # Anything worth keeping beside the headline metrics (full curves,
    # N/NB/P/Q, versions...). JSON-safe values only.
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            'tool': self.tool,
            'ok': self.ok,
            'reason': self.reason,
            'metrics': {name: {'value': m.value, 'unit': m.unit}
                        for name, m in self.metrics.items()},
            'details': self.details,
        }

    def value(self, name: str) -> float:
        return self.metrics[name].value


def failure(tool: str, reason: str, metrics=None, details=None) -> ParseResult:
    return ParseResult(tool, False, reason, dict(metrics or {}),
                       dict(details or {}))


def success(tool: str, metrics: dict[str, Metric],
            details=None) -> ParseResult:
    return ParseResult(tool, True, None, metrics, dict(details or {}))


_MPI_ABORT = re.compile(
    r'MPI_ABORT was invoked|mpirun noticed that process|'
    r'MPI_Abort\(|srun: error: .*(Exited with exit code|task \d+)|'
    r'PMIx? ?\w* ?abort|prterun noticed|Primary job +terminated normally, '
    r'but \d+ process returned'
)


def mpi_abort(text: str) -> str | None:
    """The first line that shows an MPI launcher abort, if any."""
    match = _MPI_ABORT.search(text)
    if not match:
        return None
    start = text.rfind('\n', 0, match.start()) + 1
    end = text.find('\n', match.end())
    return text[start:end if end >= 0 else None].strip()


def to_float(token: str) -> float | None:
    """A number as printed by a benchmark, or None for N/A, nan, inf..."""
    try:
        value = float(token)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def strip_rank_prefixes(text: str) -> str:
    """Drop launcher prefixes such as ``[1,0]<stdout>:`` or ``0: ``."""
    return re.sub(r'(?m)^(\[\d+,\d+\]<std(out|err)>:|[ \t]*\d+: )', '', text)
