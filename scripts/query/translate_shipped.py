"""Translates every shipped query, as `clusterproof query` and `report` read
the store for it, into translator.SHIPPED (run by scripts/setup.sh):

    .venv/bin/python -m scripts.query.translate_shipped

Each query runs once on an empty store of its own, which translates it for
the columns its load reads; the translations made are then put in place of
SHIPPED's as a whole."""
from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from pathlib import Path

from scripts.query import index, library, translator
from scripts.query.runner import Runner


def translate(into: Path) -> int:
    """Writes the translations into *into* (replaced); returns how many."""
    from scripts.report import model
    with tempfile.TemporaryDirectory(prefix='clusterproof-kql-') as scratch, \
            _translating_anew():
        results = Path(scratch) / 'results'
        results.mkdir()
        for query in [*library.shipped().values(), library.outliers_only()]:
            Runner(results_dir=results).run(query)
        model.gather(Runner(results_dir=results))
        made = index.folder(results)
        into.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(dir=into.parent, prefix='.kql-'))
        fresh.chmod(0o755)           # read by every user of the checkout
        for entry in made.glob('*.json'):
            shutil.copyfile(entry, fresh / entry.name)
            (fresh / entry.name).chmod(0o644)
        shutil.rmtree(into, ignore_errors=True)
        fresh.rename(into)
        return len(list(into.glob('*.json')))


@contextlib.contextmanager
def _translating_anew():
    """Lookups that read the home's cache alone: every query translated."""
    kept, translator.shipped = translator.shipped, None
    try:
        yield
    finally:
        translator.shipped = kept


def main() -> int:
    count = translate(translator.SHIPPED)
    print(f'translate_shipped: {count} translations in {translator.SHIPPED}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
