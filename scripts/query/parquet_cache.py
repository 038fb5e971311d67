"""Each settled session file's rows kept as Parquet under
$CLUSTERPROOF_HOME/cache/parquet/, so that a query reads the columns it
names from a fraction of the bytes instead of parsing every JSON line again.
Queries read the entries in place (local.py's view over them).

A session file only grows while its session runs, and a closed session's
file never changes. An entry holds every schema column of one file, read by
json_lines' rules (unreadable lines left out, NaN and infinity as null),
and its name is its key and its count of unreadable lines:
``<path key>-<identity key>-<unreadable>.parquet``. The path key is the
file's path under results/; the identity key its size, mtime_ns and
ctime_ns (which no copy tool sets back: a file rewritten with its old size
and mtime is a new file) and json_lines.fingerprint (the rules and the
schema's columns and types). An
appended, rewritten or replaced file, or a changed schema, finds no entry
and is read from its JSON lines again; the new entry replaces the old one.

Only a file last written more than SETTLED ago is cached (a session still
writing would be cached again at every query); the others are read from
their JSON lines in the same load. Entries are built by the query that
first reads a file (the cold run pays each write once): written to a
hidden temporary name, then renamed, so a reader never sees half an entry.
A cache that cannot be written costs only speed (one warning); an entry
that cannot be read is removed and built again.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import threading
import time
import uuid
from pathlib import Path

import duckdb

from config.results.store import files as store
from scripts.query import cache_builder, json_lines, sql_cache

SETTLED = dt.timedelta(minutes=10)
_ENTRY = re.compile(r'^([0-9a-f]{24})-([0-9a-f]{16})-(\d+)\.parquet$')
_warned = []           # the one warning a process gives


def directory(results_dir: Path) -> Path:
    return sql_cache.directory(results_dir).parent / 'parquet'


def key(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


class Cache:
    """The entries of one store, for one load."""

    def __init__(self, results_dir: Path, schema_columns: list[dict]):
        self.results_dir = results_dir
        self.where = directory(results_dir)
        self.columns = schema_columns
        self.version = json_lines.fingerprint(schema_columns)
        self.writable = True
        self.entries = {}            # (path key, identity key) -> (Path, n)
        self._keys = {}              # (path, identity) -> keys()
        self._lock = threading.Lock()  # entries, for build()'s threads
        try:
            found = os.scandir(self.where)
        except OSError:
            return
        with found:
            for item in found:
                named = _ENTRY.match(item.name)
                if named:
                    self.entries[named.group(1), named.group(2)] = (
                        Path(item.path), int(named.group(3)))

    def keys(self, path: str, stat: os.stat_result) -> tuple[str, str]:
        asked = (path, _identity(stat))
        found = self._keys.get(asked)
        if found is None:
            relative = os.path.relpath(path, self.results_dir)
            found = self._keys[asked] = (
                key(relative, 24),
                key(f'{self.version} {_identity(stat)}', 16))
        return found

    def find(self, path: str, stat: os.stat_result):
        """(entry path, unreadable lines) or None."""
        return self.entries.get(self.keys(path, stat))

    def build(self, con, path: str, stat: os.stat_result) -> int | None:
        """Writes the entry of the settled *path* from its JSON lines, when
        it is unchanged since *stat*; returns its unreadable lines, or None
        when no entry was kept (the file changed while it was read, or the
        cache cannot be written): its rows are then read as a session
        still writing is."""
        if not self.writable:
            return None
        path_key, identity = self.keys(path, stat)
        partial = self.where / f'.{path_key}-{identity}.{uuid.uuid4().hex}' \
            '.partial'
        try:
            self.where.mkdir(parents=True, exist_ok=True)
            unreadable = json_lines.write_parquet(con, self.columns, path,
                                                  str(partial))
            if _identity(os.stat(path)) != _identity(stat):
                remove(partial)      # appended while read: next time
                return None
            final = self.where / f'{path_key}-{identity}-{unreadable}.parquet'
            os.replace(partial, final)
        except (OSError, duckdb.Error) as err:
            remove(partial)
            if isinstance(err, FileNotFoundError) and err.filename == path:
                return None          # gone since listed
            self.cannot_write(err)
            return None
        with self._lock:
            for (old_path, old_identity), (old, _) in \
                    list(self.entries.items()):
                if old_path == path_key and old_identity != identity:
                    remove(old)      # the file's earlier contents
                    del self.entries[old_path, old_identity]
            self.entries[path_key, identity] = (final, unreadable)
        return unreadable

    def cannot_write(self, err) -> None:
        self.writable = False
        if not _warned:
            _warned.append(err)
            why = getattr(err, 'strerror', None) or str(err).splitlines()[0]
            store.warn(f'the query cache in {self.where} cannot be written '
                       f'({why}); queries read the JSON lines (slower)')


def _identity(stat: os.stat_result) -> tuple:
    return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def settled(stat: os.stat_result) -> bool:
    return stat.st_mtime < time.time() - SETTLED.total_seconds()


def remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def load(con, table: str, columns: list[dict],
         files: list[tuple[str, os.stat_result]],
         cache: Cache, batch_bytes: int,
         read_elsewhere: set[str] = frozenset(),
         defer: bool = False,
         outside: list[tuple[str, os.stat_result]] = ()
         ) -> tuple[list[str], int]:
    """The entries to read *files* ((path, stat) pairs) from, and the
    lines that could not be read as a row. A settled file without a
    readable entry gets one, written from its JSON lines, and it is read
    instead; the *columns* of the rest (sessions still writing, a cache
    that cannot be written) are inserted into *table* from their JSON
    lines (json_lines.read, *batch_bytes* at a time), an unreadable line
    as a row with a null record_id. With *defer*, settled files without an
    entry are inserted too, and their entries left to a builder
    (cache_builder.py), when they and those of the store's files
    *outside* them that lack one are more than its inline limit: a window
    of a store the cache lacks much of leaves its few entries to the
    builder the rest needs anyway. The entries named in *read_elsewhere*
    (their rows read from a pack) are not checked."""
    cached, rest, unreadable = [], [], 0
    for path, stat in files:
        entry = cache.find(path, stat)
        if entry is None:
            rest.append((path, stat))
        else:
            cached.append((path, stat, *entry))
            unreadable += entry[1]
    failed = _unreadable_entries(con, [
        found for found in cached if found[2].name not in read_elsewhere])
    for path, stat, _, lost in failed:
        rest.append((path, stat))     # removed: built again
        unreadable -= lost
    readable = [str(found[2]) for found in cached if found not in failed]
    kept, plain = [], []
    for path, stat in rest:
        if cache.writable and settled(stat):
            kept.append((path, stat))
        else:
            plain.append(path)
    lacking = kept + [(path, stat) for path, stat in outside
                      if settled(stat) and cache.find(path, stat) is None]
    if defer and kept and _left_to_a_builder(cache, lacking):
        plain += [path for path, _ in kept]
        kept = []
    for (path, stat), lost in zip(kept, _built(con, cache, kept)):
        if lost is None:
            plain.append(path)
        else:
            readable.append(str(cache.find(path, stat)[0]))
            unreadable += lost
    if plain:
        unreadable += json_lines.read(con, table, columns, plain,
                                      batch_bytes)
    return readable, unreadable


def _left_to_a_builder(cache: Cache, files: list) -> bool:
    """Whether the entries of *files* (settled, without one) are left to a
    builder: when their JSON lines are more than the inline limit and the
    builder's lock is free (a builder is then started) or held (one is at
    work)."""
    if sum(stat.st_size for _, stat in files) <= \
            cache_builder.inline_limit():
        return False
    try:
        lock = cache_builder.claim(cache.where)
    except OSError as err:
        cache.cannot_write(err)
        return True
    if lock is not None:
        cache_builder.start(cache.results_dir, cache.where, lock)
    return True


def _built(con, cache: Cache, files: list) -> list[int | None]:
    """cache.build() of each of *files* ((path, stat) pairs), as many at
    once as DuckDB has threads, each on a cursor of its own (one statement
    a file reads and writes it in one pass; DuckDB does not use two
    threads on a file this small, and runs two statements at once)."""
    if not files:
        return []
    workers = min(len(files), int(con.execute(
        "SELECT current_setting('threads')").fetchall()[0][0]))
    cursors = [con.cursor() for _ in range(workers)]
    for cursor in cursors:
        cursor.execute("SET TimeZone='UTC'")
    answers = [None] * len(files)
    taken = iter(range(len(files)))
    lock = threading.Lock()
    failed = []                 # what a thread did not expect: raised here

    def build(cursor):
        try:
            while not failed:
                with lock:
                    index = next(taken, None)
                if index is None:
                    return
                answers[index] = cache.build(cursor, *files[index])
        except BaseException as err:
            failed.append(err)
    threads = [threading.Thread(target=build, args=(cursor,))
               for cursor in cursors[1:]]
    for thread in threads:
        thread.start()
    build(cursors[0])
    for thread in threads:
        thread.join()
    for cursor in cursors:
        cursor.close()
    if failed:
        raise failed[0]
    return answers


def reading(entries: list[str], selected: str) -> str:
    """SQL of the *selected* columns of every row of *entries*, with
    ``_src`` (the entry) and ``_pos`` (the row's place in it), which name a
    row for deduplication."""
    return (f'SELECT {selected}, filename AS _src, file_row_number AS _pos '
            f'FROM read_parquet({json_lines.sql_list(entries)}, '
            'hive_partitioning=false, filename=true, file_row_number=true)')


def _unreadable_entries(con, cached: list) -> list:
    """Those of the *cached* entries (path, stat, entry, unreadable) whose
    Parquet cannot be read (removed, to be built again)."""
    bad = unreadable(con, [str(found[2]) for found in cached])
    failed = [found for found in cached if str(found[2]) in bad]
    for found in failed:
        remove(found[2])
    return failed


def unreadable(con, files: list[str]) -> set[str]:
    """Those of the Parquet *files* that cannot be read: one statement for
    them all, and one each only when that fails."""
    if not files:
        return set()
    try:
        count_rows(con, files)
        return set()
    except duckdb.Error:
        pass                         # find which, one by one
    bad = set()
    for path in files:
        try:
            count_rows(con, [path])
        except duckdb.Error:
            bad.add(path)
    return bad


def count_rows(con, entries: list[str]) -> int:
    return con.execute(f'SELECT count(*) FROM read_parquet('
                       f'{json_lines.sql_list(entries)}, '
                       'hive_partitioning=false)').fetchall()[0][0]
