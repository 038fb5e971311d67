"""Translates every shipped query, as `clusterproof query` and `report` run
it, into translator.SHIPPED (scripts/setup.sh runs
``.venv/bin/python -m scripts.query.translate_shipped``): each runs once on
an empty store, and the translations made replace SHIPPED's as a whole."""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from scripts.query import index, library, translator
from scripts.query.runner import Runner


def translate(into: Path) -> int:
    """Writes the translations into *into* (replaced); returns how many."""
    from scripts.report import model
    kept, translator.shipped = translator.shipped, None   # translate all
    scratch = Path(tempfile.mkdtemp(prefix='clusterproof-kql-'))
    try:
        results = scratch / 'results'
        results.mkdir()
        for query in [*library.shipped().values(), library.outliers_only()]:
            Runner(results_dir=results).run(query)
        model.gather(Runner(results_dir=results))
        into.parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(dir=into.parent, prefix='.kql-'))
        fresh.chmod(0o755)           # read by every user of the checkout
        for entry in index.folder(results).glob('*.json'):
            shutil.copyfile(entry, fresh / entry.name)
            (fresh / entry.name).chmod(0o644)
        shutil.rmtree(into, ignore_errors=True)
        fresh.rename(into)
    finally:
        translator.shipped = kept
        shutil.rmtree(scratch, ignore_errors=True)
    return len(list(into.glob('*.json')))


def main() -> int:
    count = translate(translator.SHIPPED)
    print(f'translate_shipped: {count} translations in {translator.SHIPPED}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
