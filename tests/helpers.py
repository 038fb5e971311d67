"""Small helpers shared by the tests."""
from pathlib import Path

DATA = Path(__file__).resolve().parent / 'data'
STANDINS = Path(__file__).resolve().parent / 'standins'
REPO = Path(__file__).resolve().parent.parent


def read_data(tool: str, name: str) -> str:
    return (DATA / tool / name).read_text(errors='replace')


def reframe_command(*args: str) -> list[str]:
    """The reframe of the Python running the tests, with our config."""
    import sys
    reframe = Path(sys.executable).parent / 'reframe'
    return [str(reframe), '-C', str(REPO / 'config' / 'config.py'), *args]


def run_reframe(*args: str, env: dict, cwd, timeout: int = 600):
    """Run ReFrame for real; output captured; never raises on failure."""
    import subprocess
    return subprocess.run(reframe_command(*args), env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def stored_rows(home: Path) -> list[dict]:
    import json
    rows = []
    for path in sorted((home / 'results').glob('*/*.jsonl')):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return rows
