"""Why a query answered no rows, where that can be known: nothing stored (or
nothing that --since/--cluster/--partition let through), or, once rows
exist, the condition a shipped query states for itself in a
``// when empty: ...`` line of its file (true by construction: e.g.
node_outliers returns every node that has enough peers, outlier or not)."""
from __future__ import annotations

import re

from scripts.query import library

_WHEN_EMPTY = re.compile(r'^// when empty: (.+)$', re.M)
_COUNT = library.Query('count', 'stored rows',
                       'clusterproof_results | count\n')


def _count(result) -> int:
    return result.rows[0][0] if result.rows else 0


def reason(runner, query: library.Query) -> str | None:
    # the rows the query's own reading of the store holds say it at no
    # cost; only when there are none is the whole store counted
    stored = runner.rows_read() or _count(runner.run(_COUNT))
    if not stored:
        filters = runner.filters
        if filters and (filters.since or filters.cluster or
                        filters.partition):
            return 'no stored row matches --since/--cluster/--partition'
        return f'{runner.where} holds no rows yet'
    original = library.shipped().get(query.name)
    if original is not None and query.text != original.text:
        # a shipped query narrowed by one more step (node_outliers' outliers)
        whole = _count(runner.run(library.narrowed(original, '| count')))
        if whole:
            step = query.text[len(original.text.rstrip('\n')):].strip()
            return (f'none of the {whole} row(s) of {query.name} '
                    f'is left by `{step}`')
    stated = _WHEN_EMPTY.search((original or query).text)
    return stated.group(1).strip() if stated else None
