"""The report's pieces on their own: a failure without a node names no bad
node, and one run reads as one run."""
from scripts.report import model


def test_a_failure_without_a_node_names_no_bad_node():
    latest = [{'cluster': 'c', 'check_partition': 'p', 'node': node,
               'check_name': 'StreamCheck', 'check_fail_reason': 'low',
               'completed': '2026-11-30', 'check_result': 'fail'}
              for node in (model.NO_NODE, 'hb-1')]
    assert [b['node'] for b in model._bad_nodes(latest, [])] == ['hb-1']


def test_one_run_is_one_run():
    from scripts.report import svg
    assert svg.runs_text(1) == '1 run' and svg.runs_text(3) == '3 runs'
