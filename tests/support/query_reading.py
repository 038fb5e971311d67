"""What a query store under test holds and answers: its session files and
cache entries, every row the engine holds, and every shipped query's rows
read the old way (every column of every file)."""
import json
import os
import time

from scripts.query import library, local, output, parquet_cache
from tests.support import query_store

SETTLED_AT = time.time() - 3600


def entries(home) -> list:
    """The entries (one per session file), not the packs of them."""
    return sorted(path for path in parquet_cache.directory(home / 'results')
                  .glob('*.parquet') if not path.name.startswith('pack-'))


def session_files(home) -> list:
    return sorted((home / 'results').glob('*/*.jsonl'))


def stored(home) -> list[tuple]:
    """Every row the engine holds, in a stable order."""
    con = local.connect(home / 'results')
    return con.execute('SELECT record_id, check_perf_value, TimeGenerated '
                       'FROM "ReFrameResults_CL" ORDER BY ALL').fetchall()


def append(path, text: str, when: float = SETTLED_AT) -> None:
    with open(path, 'a') as fp:
        fp.write(text)
    os.utime(path, (when, when))


def a_row(path, **values) -> str:
    """A copy of the file's first row with a new record_id and *values*."""
    row = json.loads(path.read_text().splitlines()[0])
    return json.dumps({**row, **values})


NAMES = [name for name in library.shipped() if name != library.BASE_NAME]


def as_rows(result) -> list[dict]:
    return json.loads(output.as_json(result))


def everything(home, name, filters=None):
    """The rows of *name* the old way: every column of every file, the base
    (its arg_max deduplication included) composed in front of the query."""
    con = local.connect(home / 'results')
    text = library.compose(library.resolve(name), filters)
    return as_rows(local.run(con, text, query_store.NOW))
