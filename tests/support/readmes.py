"""The repository's READMEs read as a reader meets them: their prose cut
into sentences, the durations their prose states, and the command lines of
their ``sh`` blocks."""
import re
from pathlib import Path

from tests.support.helpers import REPO

# The one README that may state how long things take: the benchmarks'.
BENCH_README = REPO / 'tests' / 'bench' / 'README.md'
# Lines between these comments repeat figures of the benchmarks' README
# (the top README's table of test tiers); a test holds them to it.
QUOTED_FIGURES = re.compile(r'<!-- tier times:.*?<!-- end of tier times -->',
                            re.S)
SKIPPED_DIRECTORIES = {'.venv', 'node_modules', '.git', '.hypothesis',
                       '__pycache__', '.pytest_cache'}

FENCE = re.compile(r'^```(\w*)\n(.*?)^```', re.S | re.M)
CODE_SPAN = re.compile(r'`[^`\n]*`')
LINK = re.compile(r'\[([^\]]*)\]\([^)]*\)')
QUOTATION = re.compile(r'"[^"\n]*"')
# A link to a page on the web: the sentence's figures are its source's.
PUBLISHED = re.compile(r'\]\(https?://')
# A sentence ends at . ! or ? before a space and what starts a sentence.
SENTENCE_END = re.compile(r'(?<=[.!?])\s+(?=[A-Z0-9*(_"])')
LIST_ITEM = re.compile(r'([-*]|\d+\.)\s')
# A number and a unit of time: 0.27 s, ~1 s, 12–14 s, 65.9 ms, 3 min, 2 hours.
DURATION = re.compile(
    r'(?<![\w.])~?\d[\d,.]*(?:\s?(?:–|-|to)\s?\d[\d,.]*)?\s?'
    r'(?:ms|µs|us|s|sec|seconds?|min|minutes?|h|hours?)(?![\w/])')


def readme_paths() -> list[Path]:
    """Every README.md of the repository, the top one first."""
    found = [path for path in REPO.rglob('README.md')
             if not SKIPPED_DIRECTORIES & set(path.relative_to(REPO).parts)]
    return sorted(found, key=lambda path: (len(path.parts), str(path)))


def without_code(text: str) -> str:
    """The text without fenced blocks and HTML comments or tags."""
    text = FENCE.sub('', text)
    text = re.sub(r'<!--.*?-->', '', text, flags=re.S)
    return re.sub(r'<[^>\n]*>', '', text)


def prose_units(text: str) -> list[str]:
    """Paragraphs, list items and table cells, each joined on one line."""
    units, lines = [], []

    def close():
        if lines:
            units.append(' '.join(lines))
            lines.clear()

    for line in without_code(text).splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith('#'):
            close()
        elif stripped.startswith('|'):
            close()
            if not re.fullmatch(r'[|:\- ]+', stripped):
                units += [cell for cell in
                          re.split(r'(?<!\\)\|', stripped.strip('|'))
                          if cell.strip()]
        else:
            if LIST_ITEM.match(stripped):
                close()
            lines.append(stripped)
    close()
    return units


def sentences(text: str) -> list[str]:
    """The prose's sentences; a code span or a link counts as its text."""
    found = []
    for unit in prose_units(text):
        unit = LINK.sub(r'\1', CODE_SPAN.sub('CODE', unit))
        found += [part.strip() for part in SENTENCE_END.split(unit)
                  if part.strip()]
    return found


def word_count(sentence: str) -> int:
    return len(sentence.split())


def durations(text: str) -> list[str]:
    """The durations the prose states, outside code and quotations: a
    setting's value is written as code, a quotation is its source's, and
    so is a figure in a sentence that links its published source."""
    text = QUOTED_FIGURES.sub('', text)
    found = []
    for unit in prose_units(text):
        unit = QUOTATION.sub('', CODE_SPAN.sub('', unit))
        for sentence in SENTENCE_END.split(unit):
            if not PUBLISHED.search(sentence):
                found += [match.group(0)
                          for match in DURATION.finditer(sentence)]
    return found


def command_lines(path: Path) -> list[str]:
    """The command lines of the README's ``sh`` blocks, in order."""
    return [line for language, body in FENCE.findall(path.read_text())
            if language == 'sh'
            for line in body.splitlines() if line.strip()]


def block_after(path: Path, after: str) -> list[str]:
    """The command lines of the first ``sh`` block after the text
    ``after`` in the README at ``path``."""
    text = path.read_text()
    start = text.index(after)
    match = re.compile(r'^```sh\n(.*?)^```', re.S | re.M).search(text, start)
    return [line for line in match.group(1).splitlines() if line.strip()]
