"""The one reader of clusterproof's tuning settings (environment variables).

A tuning setting has a safe default: a value that is not a finite number in
its range gives one warning naming the variable, the value and the default
used, and the run goes on with the default. A setting without a safe
default (CLUSTERPROOF_HOME that is a file, CLUSTERPROOF_AZURE_PARTITIONS
malformed) raises SettingError instead: one line, and the command stops
(ReFrame reports an OSError raised by its configuration in one line).
"""
from __future__ import annotations

import math
import os
import sys

_warned: set[str] = set()


class SettingError(OSError):
    """A setting with no safe default is wrong; the message says how."""


def seconds(name: str, default: float, maximum: float = 7 * 86400) -> float:
    """A number of seconds from 0 to maximum, else the default (warned)."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 <= value <= maximum:
        return value
    if name not in _warned:
        _warned.add(name)
        print(f'clusterproof: WARNING: {name}={text!r} is not a number of '
              f'seconds from 0 to {maximum:g}; using the default {default:g}',
              file=sys.stderr, flush=True)
    return default
