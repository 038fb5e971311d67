"""ReFrame's own log file: 'verbose' by default (each record it logs costs
ReFrame a walk of the whole stack, tests/bench/README.md, "Acceptance at scale"), the
full debug log on request."""
from config.results.handlers import reframe_logging


def levels(config):
    [logging] = config
    return logging['level'], [h['level'] for h in logging['handlers']
                              if h['type'] == 'file']


def test_the_reframe_log_is_verbose_unless_asked_for_debug(tmp_path,
                                                            monkeypatch):
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path))
    monkeypatch.delenv(reframe_logging.LOG_LEVEL_VARIABLE, raising=False)
    assert levels(reframe_logging.logging_config()) == ('verbose', ['verbose'])
    monkeypatch.setenv(reframe_logging.LOG_LEVEL_VARIABLE, 'debug')
    assert levels(reframe_logging.logging_config()) == ('debug', ['debug'])
