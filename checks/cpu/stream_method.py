"""How a STREAM run was measured, as its reference key reads it.

A STREAM number depends on the binary's build (array size and NTIMES, both
printed by STREAM itself), the OpenMP thread count and where the threads
are placed (OMP_PLACES). Those four fields are the run's method fingerprint
(reference_key.FINGERPRINTS['stream']); a reference in stream.yaml carries
the same four, plus the environment that placed its threads (``env``),
which the check sets when it follows the reference's method.
"""
from __future__ import annotations

import zlib


def places_label(omp_places: str | None) -> str | None:
    """OMP_PLACES as a key field: an abstract name as it is ('cores'); an
    explicit list as its length and checksum ('list48-1a2b3c4d'), so that
    two runs share the label exactly when they share the list."""
    if not omp_places:
        return None
    if '{' not in omp_places:
        return omp_places
    count = omp_places.count('{')
    return f'list{count}-{zlib.crc32(omp_places.encode()):08x}'


def run_fingerprint(parsed_details: dict, env: dict, ranks: int = 1) -> dict:
    """The fingerprint of a run: array size, NTIMES and threads as STREAM
    printed them, placement as the job set it."""
    return {
        'array_size': parsed_details.get(
            'total_array_size', parsed_details.get('array_size')),
        'ntimes': parsed_details.get('ntimes'),
        'threads': parsed_details.get(
            'threads_counted', parsed_details.get('threads_requested')),
        'places': places_label(env.get('OMP_PLACES')),
        'ranks': ranks,
    }


def env_differences(reference_env: dict, run_env: dict) -> list[str]:
    """OpenMP settings of the reference's run that this run did not make
    (beyond OMP_PLACES, which the key holds)."""
    found = []
    for name, wanted in sorted((reference_env or {}).items()):
        if name != 'OMP_PLACES' and str(run_env.get(name)) != str(wanted):
            found.append(f'{name}={run_env.get(name, "unset")} '
                         f'(reference: {wanted})')
    return found
