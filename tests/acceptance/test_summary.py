"""The acceptance summary lists and counts what passed."""
from scripts.acceptance import summary
from scripts.acceptance.verdicts import FAIL, NOT_MEASURED, PASS, Finding


def finding(check, verdict, metric=None, node='*', jobid='1'):
    return Finding(node=node, partition='local:default', check=check,
                   verdict=verdict, metric=metric, jobid=jobid)


def test_acceptance_lists_and_counts_what_passed():
    findings = [finding('HpccNode', 'no_reference', 'HPL_Tflops'),
                finding('HpccNode', 'informational', 'PTRANS_GBs'),
                finding('IorCheck', NOT_MEASURED, jobid=None),
                finding('HplCheck', FAIL, 'gflops', jobid='2'),
                finding('HplCheck', PASS, 'efficiency', jobid='2')]
    passes = summary.whole_partition_passes(findings)
    assert passes == [{'partition': 'local:default', 'check': 'HpccNode',
                       'results': 2}]
    counts = summary.check_counts(findings)
    assert counts == {PASS: 1, FAIL: 1, NOT_MEASURED: 1}
    table = summary.table_lines([], [], passes)
    assert table[1].split()[:7] == ['local:default', '(whole)', 'HpccNode',
                                    '-', '-', '-', 'pass']
    assert summary.count_line(summary.node_counts([]), counts) == (
        '0 node(s): 0 bad, 0 suspect, 0 not measured, 0 powered down, 0 '
        'good; 3 check result(s): 1 passed, 1 failed, 1 not measured')
