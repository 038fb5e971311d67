"""One sample file of checks/common/node_probe.sh, split into sections."""
from __future__ import annotations

from dataclasses import dataclass, field

MARK = '##clusterproof-health '
NOT_AVAILABLE = 'not-available '


@dataclass
class Dump:
    """Lines by section name, and why a source is not available."""
    sections: dict[str, list[str]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def lines(self, name: str) -> list[str]:
        return self.sections.get(name, [])

    def text(self, name: str) -> str:
        return '\n'.join(self.lines(name))

    def time(self) -> int | None:
        for line in self.lines('time'):
            if line.strip().isdigit():
                return int(line.strip())
        return None


def split(text: str) -> Dump:
    """Sections of a sample, in one pass; a 'not-available SOURCE: why'
    marker ends up in ``missing``."""
    dump = Dump()
    current = None
    for line in text.splitlines():
        if line.startswith(MARK):
            rest = line[len(MARK):]
            if rest.startswith(NOT_AVAILABLE):
                source, _, why = rest[len(NOT_AVAILABLE):].partition(':')
                dump.missing[source.strip()] = why.strip()
                continue
            current = rest.strip()
            dump.sections.setdefault(current, [])
        elif current is not None:
            dump.sections[current].append(line)
    return dump
