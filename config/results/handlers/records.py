"""A ReFrame perf record -> the rows of its test, made once per job.

The test lists what it measured (``measurements()``, checks/common/
measurements.py); the row builder (rows/builder.py) serialises that list
with the run's columns as ReFrame logged them. A record without a test, or
of a test that lists nothing, is one row of the record's own variable.
"""
from __future__ import annotations

from ..rows import builder

# A LogRecord attribute holding its row, so every handler sends the same one
ROW_ATTR = '_clusterproof_row'

PERF_COLUMNS = {'value': 'check_perf_value', 'reference': 'check_perf_ref',
                'lower': 'check_perf_lower_thres',
                'upper': 'check_perf_upper_thres',
                'unit': 'check_perf_unit',
                'stage_result': 'check_perf_result'}


def _logged_measurement(attrs: dict) -> dict:
    """The record's own variable, as a Measurement's fields."""
    return {'metric': attrs.get('check_perf_var'),
            **{name: attrs.get(column)
               for name, column in PERF_COLUMNS.items()}}


def rows_of_test(record, session_id: str) -> list[dict]:
    """Rows for every measurement of the record's test, made once."""
    return list(_rows_by_var(record, session_id).values())


def _rows_by_var(record, session_id: str) -> dict[str, dict]:
    """Perf variable (as ReFrame names it) -> its row, for every
    measurement of the record's test (and its health samples), made once
    per job.

    With perflog_multiline ReFrame logs one record per variable and stops at
    the first handler error, losing the rest; building all rows from the
    first record lets the store keep them whatever a later handler does.
    """
    attrs = record.__dict__
    check = attrs.get('__rfm_check__')
    if check is None:
        cached = attrs.get(ROW_ATTR)
        if cached is None:
            cached = builder.row(attrs, _logged_measurement(attrs),
                                 session_id)
            attrs[ROW_ATTR] = cached
        return {attrs.get('check_perf_var'): cached}
    made = check.__dict__.setdefault(ROW_ATTR, {}).setdefault(
        attrs.get('check_jobid'), {})
    if not made or attrs.get('check_perf_var') not in made:
        # all at the first record; a test that evaluated no value (a dry
        # run, a failed sanity) lists each record's own variable
        fresh = {name: measured for name, measured
                 in _listed(check, attrs).items() if name not in made}
        made.update(zip(fresh, builder.rows(attrs, fresh.values(),
                                            session_id)))
    return made


def _listed(check, attrs: dict) -> dict:
    """Perf variable -> measurement: what the test lists, else (a ReFrame
    test that is no clusterproof check) ReFrame's own perf values, else the
    record's own variable."""
    lists = getattr(check, 'measurements', None)
    if lists is not None:
        return lists(attrs)
    partition = getattr(check, 'current_partition', None)
    test = {'params': {name: getattr(check, name, None)
                       for name in type(check).param_space.params},
            'vm_sku': partition.extras.get('vm_sku') if partition else None}
    values = getattr(check, 'perfvalues', None) or {}
    if not values or attrs.get('check_perf_var') is None:
        return {attrs.get('check_perf_var'): {**_logged_measurement(attrs),
                                              **test}}
    return {var.split(':')[-1]: {'metric': var.split(':')[-1], **test,
                                 **dict(zip(PERF_COLUMNS, info))}
            for var, info in values.items()}


def row_from_log_record(record, session_id: str) -> dict:
    """The row of one ReFrame perflog record (perflog_multiline)."""
    var = record.__dict__.get('check_perf_var')
    rows = _rows_by_var(record, session_id)
    return rows.get(var) or next(iter(rows.values()))


def is_dry_run(record) -> bool:
    check = record.__dict__.get('__rfm_check__')
    if check is not None and hasattr(check, 'is_dry_run'):
        return bool(check.is_dry_run())
    return (record.__dict__.get('check_jobid') is None and
            record.__dict__.get('check_perf_value') is None)
