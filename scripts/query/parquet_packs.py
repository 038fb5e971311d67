"""Packs: the Parquet cache's entries (parquet_cache.py), PACK_ENTRIES at a
time, copied into one file, so that a query opens a few files instead of
one per session: DuckDB pays about half a millisecond a file each time a
query reads it, and the report's queries read the store many times (1M
rows: they took 11.4 s over 450 entries, 7.8 s over one file).

A pack is ``pack-<key>.parquet``, the rows of its members (entry names),
beside ``pack-<key>.json``, the list of them (written after
the pack: a pack without its list is not read). It stands for its members
only while each is the current entry of a session file that is there
(local.py passes them), and is read whole where a load wants any member: a
window that wants part of a pack gets rows from outside it as well, which
its query's own filters leave out (a window of 7 days at 1M rows: one pack
and two entries instead of 35 entries). Entries are packed in the store's
order (by day, then session), so a window reads at most a pack more than
it needs at each of its ends. An entry is packed once; the entries no pack
holds are packed when a load finds PACK_MIN of them. A pack whose members
are no longer all current is marked stale and removed SETTLED later (a
query that loaded it before may still be reading it); its entries that are
left are packed again.
"""
from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from scripts.query import json_lines, parquet_cache

PACK_ENTRIES = 64
PACK_MIN = 16
_PACK = re.compile(r'^pack-([0-9a-f]{16})\.parquet$')


@dataclass
class Packs:
    """The packs a load reads: *chosen*, and the entry names they hold
    (*covered*); *in_a_pack*, the members of every current pack."""
    chosen: list[str]
    covered: set[str]
    in_a_pack: set[str]


def covering(con, cache: parquet_cache.Cache, wanted: set[str],
             existing: list[str]) -> Packs:
    """The packs that hold the *wanted* entries (names): every current
    pack holding one of them, the largest first, none twice over. A pack
    is current only while each of its members is in *existing*, the
    entries of the session files there are now: a deleted or rewritten
    file's rows never come back through a pack. The entries it covers need
    not be read, nor checked, one by one."""
    packs = _current_packs(cache, {Path(entry).name for entry in existing})
    damaged = _damaged(con, [pack for pack, members in packs
                             if members & wanted])
    packs = [(pack, members) for pack, members in packs
             if pack not in damaged]
    found = Packs([], set(), set().union(*(m for _, m in packs)))
    for pack, members in packs:
        if members & wanted and not members & found.covered:
            found.chosen.append(pack)
            found.covered |= members
    return found


def files_to_read(con, cache: parquet_cache.Cache, packs: Packs,
                  entries: list[str]) -> list[str]:
    """The Parquet files that hold the rows of *entries* (paths, in the
    store's order), each row once: the *packs* covering() chose, then the
    entries they do not hold (packed first when PACK_MIN of them are in
    no pack and the cache can be written). A pack read for part of its
    members brings rows outside the window too; the queries and filters
    leave them out, as Log Analytics, which holds them all, does."""
    chosen, covered = list(packs.chosen), set(packs.covered)
    loose = [e for e in entries if Path(e).name not in covered]
    unpacked = [e for e in loose if Path(e).name not in packs.in_a_pack]
    for start in range(0, len(unpacked), PACK_ENTRIES):
        batch = unpacked[start:start + PACK_ENTRIES]
        if len(batch) < PACK_MIN or not cache.writable:
            break
        pack = _write(con, cache, batch)
        if pack is None:
            break
        chosen.append(pack)
        covered |= {Path(entry).name for entry in batch}
    return chosen + [e for e in loose if Path(e).name not in covered]


def _current_packs(cache: parquet_cache.Cache,
                   current: set) -> list[tuple[str, set]]:
    """(pack, members) of every pack whose members are all *current*
    entries, the largest first. A pack found otherwise (a member replaced
    or gone, or its list missing) gets a ``.stale`` mark, and is removed
    with it once the mark is older than SETTLED: a query that loaded it
    before may still be reading it until then."""
    found = []
    try:
        listing = os.scandir(cache.where)
    except OSError:
        return []
    with listing:
        names = [item.path for item in listing if _PACK.match(item.name)]
    for path in map(Path, names):
        members = _members(path.with_suffix('.json'))
        if members and members <= current:
            found.append((str(path), members))
        else:
            _stale(path)
    found.sort(key=lambda pack: (-len(pack[1]), pack[0]))
    return found


def _stale(pack: Path) -> None:
    mark = pack.with_suffix('.stale')
    try:
        marked = mark.stat().st_mtime
    except FileNotFoundError:
        try:
            mark.touch()
        except OSError:
            pass
        return
    except OSError:
        return
    if marked < time.time() - parquet_cache.SETTLED.total_seconds():
        for path in (pack, pack.with_suffix('.json'), mark):
            parquet_cache.remove(path)


def _members(listing: Path) -> set | None:
    try:
        members = json.loads(listing.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(members, list) or \
            not all(isinstance(m, str) for m in members):
        return None
    return set(members)


def _damaged(con, chosen: list[str]) -> set[str]:
    """The *chosen* packs whose Parquet cannot be read (removed: their
    members are read one by one, and packed again)."""
    damaged = parquet_cache.unreadable(con, chosen)
    for pack in damaged:
        parquet_cache.remove(Path(pack))
        parquet_cache.remove(Path(pack).with_suffix('.json'))
    return damaged


def _write(con, cache: parquet_cache.Cache, batch: list[str]) -> str | None:
    """A pack of the *batch* of entries; None when it cannot be written
    (the cache's one warning). Its list is written after it: a pack found
    without one is not read, and is removed as stale."""
    names = [Path(entry).name for entry in batch]
    final = cache.where / f'pack-{parquet_cache.key(" ".join(names), 16)}' \
        '.parquet'
    hidden = f'.{final.name}.{uuid.uuid4().hex}'
    partial, partial_listing = (cache.where / f'{hidden}.partial',
                                cache.where / f'{hidden}.json.partial')
    try:
        # Free to write the rows in any order, DuckDB copies the members
        # on both threads (a third less time); a row is named by its place
        # in the pack once it is written (local.py's _pos).
        con.execute('SET preserve_insertion_order = false')
        try:
            con.execute(f'COPY (SELECT * FROM read_parquet('
                        f'{json_lines.sql_list(batch)}, '
                        'hive_partitioning=false)) TO '
                        f'{json_lines.sql_string(str(partial))} '
                        '(FORMAT parquet)')
        finally:
            con.execute('RESET preserve_insertion_order')
        os.replace(partial, final)
        partial_listing.write_text(json.dumps(names))
        os.replace(partial_listing, final.with_suffix('.json'))
    except (OSError, duckdb.Error) as err:
        cache.cannot_write(err)
        for path in (partial, partial_listing):
            parquet_cache.remove(path)
        return None
    return str(final)
