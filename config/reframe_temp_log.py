"""ReFrame's first log file, which it would leave behind in the temporary
directory.

Before it reads this configuration, ReFrame logs through its built-in
logging configuration, whose file handler has no name: every ReFrame call
creates a fresh ``rfm-XXXXXXXX.log`` there (reframe/core/logging.py,
``_create_file_handler``: ``osext.mkstemp_path(prefix='rfm-')``). Once this
configuration's own log (``$CLUSTERPROOF_HOME/logs/``) takes over, nothing
points at that file any more; it is removed when the ReFrame process ends.
A ReFrame that stops before it has read this configuration keeps it, and
says so in its last line ("Log file(s) saved in ...").
"""
import atexit
import os
import tempfile


def builtin_log_paths():
    """The rfm-*.log files in the temporary directory that ReFrame's logger
    writes to at this moment (none outside a ReFrame process)."""
    try:
        from reframe.core import logging as reframe_logging
    except ImportError:
        return []
    logger = getattr(reframe_logging, '_logger', None)
    found = []
    for handler in getattr(logger, 'handlers', None) or []:
        path = getattr(handler, 'baseFilename', '')
        name = os.path.basename(path)
        if (name.startswith('rfm-') and name.endswith('.log')
                and os.path.dirname(path) == tempfile.gettempdir()):
            found.append(path)
    return found


def _remove(paths):
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def remove_at_exit():
    paths = builtin_log_paths()
    if paths:
        atexit.register(_remove, paths)
    return paths
