"""The node says what it is: every job asks the metadata service for its VM
size (here a loopback stand-in that, like IMDS, answers only with
`Metadata: true`), rows carry it, and a node of another SKU than its
partition declares is a finding with informational results, for that node
only, also in a batch job of many nodes (every node asks for itself).
Nothing is sent to 169.254.169.254 or any other non-loopback address: the
URL is a setting, and the azure job scripts are only written (--dry-run),
never run."""
import os
import shutil
import subprocess
from pathlib import Path

from checks.common import (health_sampling, job_nodes, launch, node_probe,
                           references, vm_size)
from tests.support.acceptance_runs import (NODES, STREAM_ONLY, acceptance,
                                           expected, stored, verdict_of)
from tests.support.helpers import only_job_script
from tests.support.loopback_imds import LoopbackImds


def test_vm_size_answers_and_mismatches():
    assert vm_size.parse_vm_size('Standard_HB176rs_v4\n') == \
        'Standard_HB176rs_v4'
    assert vm_size.parse_vm_size('<html><body>404</body></html>') == ''
    assert vm_size.parse_vm_size('') == ''
    assert vm_size.mismatch('hpc', 'Standard_HB176rs_v4',
                            'Standard_HB120rs_v3', 'hpc-3') == \
        'partition hpc declares Standard_HB176rs_v4, node hpc-3 is ' \
        'Standard_HB120rs_v3'
    assert vm_size.mismatch('hpc', 'Standard_HB176rs_v4',
                            'standard_hb176rs_v4', 'hpc-3') == ''
    assert vm_size.mismatch('hpc', 'Standard_HB176rs_v4', '', 'hpc-3') == ''


def probe(directory, url: str, env: dict, sh: str = 'sh'):
    """node_probe.sh before the run, only asking the VM size, as a job's
    node runs it; what it wrote, read as the test reads it."""
    result = subprocess.run(
        [sh, node_probe.PROBE, 'before', 'probes', '', '', url,
         node_probe.NO_HEALTH], cwd=directory, env=env, capture_output=True,
        text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return health_sampling.samples_of(str(directory / 'probes'))


def test_the_probe_asks_with_the_header_and_records_the_size(tmp_path):
    with LoopbackImds({'sb-n3': 'Standard_HB120rs_v3'}) as imds:
        samples = probe(tmp_path, imds.url,
                        {**os.environ, 'SLURMD_NODENAME': 'sb-n3'})
        assert vm_size.node_sizes(samples, ['sb-n3']) == \
            {'sb-n3': 'Standard_HB120rs_v3'}
        # only the VM size was asked for: no health source in the file
        assert set(samples['sb-n3']['before'].sections) == \
            {'time', vm_size.SECTION}
        # like IMDS, no header gets no answer; the job then records nothing
        bare = subprocess.run(['curl', '-s', '-o', '/dev/null', '-w',
                               '%{http_code}', imds.url.replace('%n',
                                                                'sb-n3')],
                              capture_output=True, text=True, timeout=30)
        assert bare.stdout == '400'
        samples = probe(tmp_path, imds.url,
                        {**os.environ, 'SLURMD_NODENAME': 'sb-n9'})
        assert vm_size.node_sizes(samples, ['sb-n9']) == {}
        assert samples['sb-n9']['before'].text(vm_size.SECTION) == ''
    assert [(r['node'], r['metadata']) for r in imds.requests] == [
        ('sb-n3', 'true'), ('sb-n3', None), ('sb-n9', 'true')]


def test_a_node_without_curl_says_so_and_records_no_size(tmp_path):
    """A minimal image without curl: the node's file says why it has no
    size, and the reading side reports it, never a size."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for tool in ('sh', 'date', 'mkdir', 'mv', 'sed'):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    samples = probe(tmp_path, 'http://127.0.0.1:9/%n',
                    {'PATH': str(bin_dir), 'SLURMD_NODENAME': 'sb-n2'},
                    sh=shutil.which('sh'))
    said = 'no HTTP client: curl is not installed on sb-n2'
    assert vm_size.no_http_client(samples) == [said]
    assert vm_size.node_sizes(samples, ['sb-n2']) == {}


IMDS = ('http://169.254.169.254/metadata/instance/compute/vmSize'
        '?api-version=2021-02-01&format=text')


def test_azure_job_scripts_ask_imds_with_a_2s_limit(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^StreamCheck$',
                             checks='checks/cpu/stream.py')
    assert f"sh ./clusterproof_node_probe.sh before clusterproof_health " \
        f"/sys " in script and f" '{IMDS}'" in script
    assert ("curl -s -f -m 2 -H 'Metadata: true' --noproxy '*' \"$url\"" in
            Path(node_probe.PROBE).read_text())


def test_every_node_of_a_slurm_job_asks_for_itself(tmp_path):
    script = only_job_script(tmp_path, 'azure:hbv4', '^StreamCheck$',
                             checks='checks/cpu/stream.py')
    lines = script.splitlines()
    line = next(line for line in lines if IMDS in line)
    # one srun step with a task on each node; the batch script's node asks
    # only in a one-node job (or when the step cannot start), never a
    # second time beside its own task
    command = line[len('{ if [ "${SLURM_JOB_NUM_NODES:-1}" -gt 1 ]; then '
                       'srun --overlap --nodes="$SLURM_JOB_NUM_NODES" '
                       '--ntasks="$SLURM_JOB_NUM_NODES" '
                       '--ntasks-per-node=1 '):].split(' || ')[0]
    assert command.startswith('sh ./clusterproof_node_probe.sh before ')
    assert line == launch.on_every_node(command, 'slurm')
    assert line == ('{ if [ "${SLURM_JOB_NUM_NODES:-1}" -gt 1 ]; then '
                    'srun --overlap --nodes="$SLURM_JOB_NUM_NODES" '
                    '--ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 '
                    f'{command} || {command}; else {command}; fi; }} '
                    '>/dev/null 2>&1 || true')
    # the second line of the script, after the one recording the nodes
    assert lines.index(line) == lines.index(next(
        text for text in lines if job_nodes.NODES_FILE in text)) + 1
    assert [text for text in lines if 'vmSize' in text] == [line]
    assert not [text for text in lines if 'curl' in text]


def test_a_step_on_every_node_is_slurm_s_only():
    """Elsewhere (PBS, local) the node that runs the batch script probes
    itself alone."""
    for scheduler in ('pbs', 'torque', 'local'):
        assert launch.on_every_node('sh ./probe.sh before', scheduler) == \
            '{ sh ./probe.sh before; } >/dev/null 2>&1 || true'


def test_a_node_of_another_sku_is_a_finding_and_informational(sandbox_env):
    sizes = {node: 'Standard_HB176rs_v4' for node in NODES}
    sizes['sb-n3'] = 'Standard_HB120rs_v3'
    with LoopbackImds(sizes) as imds:
        env = {**sandbox_env, 'CLUSTERPROOF_IMDS_URL': imds.url}
        result, summary = acceptance(
            env, '--system', 'sandbox', '--partition', 'hbv4', *STREAM_ONLY,
            '--', '-S', 'array_size=20000000')
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert verdict_of(summary) == expected('good', {'sb-n3': 'not_measured'})
    assert ('partition hbv4 declares Standard_HB176rs_v4, node sb-n3 is '
            'Standard_HB120rs_v3: its results are informational') in out
    # every node asked for itself, once, in one batch job (the default
    # batch)
    assert sorted(r['node'] for r in imds.requests) == sorted(NODES)
    assert all(r['metadata'] == 'true' for r in imds.requests)
    rows = {r['check_job_nodelist'][0]: r for r in stored(env)
            if r['check_perf_var'] == 'triad_bw'}
    assert len({r['check_jobid'] for r in rows.values()}) == 1
    assert {n: r['vm_sku_observed'] for n, r in rows.items()} == sizes
    assert {n: r['vm_sku'] for n, r in rows.items()} == \
        {n: 'Standard_HB176rs_v4' for n in NODES}
    # sb-n3's row as its one-node job's: judged against nothing, the
    # observed SKU's reference, key, source and peak shown
    odd = rows['sb-n3']
    assert odd['check_perf_result'] == 'informational'
    assert odd['check_perf_lower_thres'] is None
    match = references.find('stream', 'triad_bw', 'Standard_HB120rs_v3',
                            odd['check_params']['measured_method'])
    assert odd['check_perf_ref'] == match.reference.value
    assert odd['reference_source'] == match.reference.source
    assert odd['check_perf_peak'] == references.lookup_peaks(
        'stream', 'Standard_HB120rs_v3')['triad_bw'].value
    assert odd['reference_key'].startswith('triad_bw|HB120rs_v3|')
    assert odd['check_params']['no_verdict_reasons'] == [
        'partition hbv4 declares Standard_HB176rs_v4, node sb-n3 is '
        'Standard_HB120rs_v3']
    # the other nodes of the batch judged as their partition's SKU
    for node in set(NODES) - {'sb-n3'}:
        assert rows[node]['check_perf_result'] == 'pass', node
        assert rows[node]['reference_key'].startswith(
            'triad_bw|HB176rs_v4|')
        assert 'no_verdict_reasons' not in rows[node]['check_params']

