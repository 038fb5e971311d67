"""Where the checkout and its .venv are, and the commands the CLI prints as
next steps, spelled so that they work when pasted into the user's shell
(activated venv or not, from the checkout or elsewhere)."""
from __future__ import annotations

import os
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
VENV_BIN = REPO / '.venv' / 'bin'


def shown(path: Path) -> str:
    """``path`` relative to the current directory when it lies below it, so
    printed commands stay short in the checkout and valid elsewhere."""
    path = Path(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def reframe_command_line(*args: str) -> str:
    """``.venv/bin/reframe -C config/config.py ARGS`` with paths that exist
    from here; ``-c checks`` is resolved against the checkout too."""
    words = [shown(VENV_BIN / 'reframe'), '-C', shown(REPO / 'config' / 'config.py')]
    for index, arg in enumerate(args):
        if index and args[index - 1] == '-c' and not os.path.isabs(arg):
            arg = shown(REPO / arg)
        words.append(arg)
    return shlex.join(words)


def clusterproof_command_line(*args: str) -> str:
    return shlex.join([shown(REPO / 'scripts' / 'clusterproof'), *args])
