"""Whether a STREAM run was measured the way its reference was.

A reference's method (checks/references/stream.yaml, ``method``) names the
array size the binary was built with, the OpenMP thread count and the
environment that placed the threads. A run is judged against the reference
only when all of them match; otherwise its numbers mean something else and
are recorded for information.
"""
from __future__ import annotations


def run_method(parsed_details: dict, env: dict, build: str = '') -> dict:
    """What the run actually did: array size and threads as STREAM printed
    them, the OpenMP environment the job set, and the build as declared."""
    method = {
        'array_elements': parsed_details.get('array_size'),
        'threads': parsed_details.get('threads_counted',
                                      parsed_details.get('threads_requested')),
        'env': {name: value for name, value in sorted(env.items())
                if name.startswith('OMP_')},
    }
    if build:
        method['build'] = build
    return method


def differences(reference: dict, run: dict) -> list[str]:
    """How ``run`` departs from ``reference``: [] when it follows it. An
    empty reference (method unknown) is never followed."""
    if not reference:
        return ['the reference does not say how it was measured']
    found = []
    for key, label in (('array_elements', 'array size'),
                       ('threads', 'threads')):
        wanted = reference.get(key)
        if wanted is not None and run.get(key) != wanted:
            found.append(f'{label} {run.get(key)} (reference: {wanted})')
    run_env = run.get('env', {})
    for name, wanted in sorted((reference.get('env') or {}).items()):
        if str(run_env.get(name)) != str(wanted):
            shown = run_env.get(name, 'unset')
            if len(str(wanted)) > 40:
                found.append(f'{name} differs from the reference\'s')
            else:
                found.append(f'{name}={shown} (reference: {wanted})')
    return found
