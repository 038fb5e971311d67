"""ReFrame's first log file, which it would leave behind in the temporary
directory.

Before it reads this configuration, ReFrame logs through its built-in
logging configuration, whose file handler has no name: every ReFrame call
creates a fresh ``rfm-XXXXXXXX.log`` there (reframe/core/logging.py,
``_create_file_handler``: ``osext.mkstemp_path(prefix='rfm-')``). Once this
configuration's own log (``$CLUSTERPROOF_HOME/logs/``) takes over, nothing
points at that file any more; it is removed when the ReFrame process ends.
A ReFrame that stops before it has read this configuration keeps it, and
says so in its last line ("Log file(s) saved in ..."). When this
configuration refuses to load (an unusable CLUSTERPROOF_HOME), the file is
removed at once and ReFrame's logger lets go of it, so that its last line
names no file that is gone.
"""
import atexit
import os
import tempfile


def _reframe_logger():
    try:
        from reframe.core import logging as reframe_logging
    except ImportError:
        return None
    return getattr(reframe_logging, '_logger', None)


def _builtin_file_handlers(logger):
    found = []
    for handler in getattr(logger, 'handlers', None) or []:
        path = getattr(handler, 'baseFilename', '')
        name = os.path.basename(path)
        if (name.startswith('rfm-') and name.endswith('.log')
                and os.path.dirname(path) == tempfile.gettempdir()):
            found.append(handler)
    return found


def builtin_log_paths():
    """The rfm-*.log files in the temporary directory that ReFrame's logger
    writes to at this moment (none outside a ReFrame process)."""
    return [handler.baseFilename
            for handler in _builtin_file_handlers(_reframe_logger())]


def let_go():
    """Detach ReFrame's first log file from its logger and remove it: the
    configuration refused to load, and ReFrame would name the file in its
    last line after the exit handler had removed it."""
    logger = _reframe_logger()
    for handler in _builtin_file_handlers(logger):
        logger.removeHandler(handler)
        handler.close()
        _remove([handler.baseFilename])


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
