"""`clusterproof deploy` against a stand-in `az`: a script first on PATH that
records every argv it gets and answers like the Azure CLI does."""
import argparse
import json
import subprocess
import sys

import pytest

from scripts.cli import deploy

NODES_IDENTITY = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
OUTPUTS = {
    'DATA_COLLECTION_ENDPOINT': {
        'type': 'String',
        'value': 'https://clusterproof-dce-x1y2.eastus-1.ingest.monitor.azure.com'},
    'LOGS_DCR_RULE_ID': {'type': 'String',
                         'value': 'dcr-5c1e0b3f9a8d4e7f8a6b2c4d1e3f5a7b'},
    'LOGS_DCR_STREAM_NAME': {'type': 'String',
                             'value': 'Custom-ReFrameResults_CL'},
    'LOGS_WORKSPACE_ID': {'type': 'String',
                          'value': '7d3e2f1a-6b5c-4d8e-9f0a-1b2c3d4e5f6a'},
    'workspaceResourceId': {
        'type': 'String',
        'value': '/subscriptions/x/resourceGroups/rg-hpc/providers/'
                 'Microsoft.OperationalInsights/workspaces/clusterproof-law'},
}
ACCOUNT = {'id': '11111111-2222-3333-4444-555555555555',
           'name': 'hpc-acceptance', 'user': {'name': 'admin@example.org'}}

FAKE_AZ = '''\
#!{python}
import json, os, sys
with open(os.environ['FAKE_AZ_LOG'], 'a') as log:
    log.write(json.dumps(sys.argv[1:]) + '\\n')
if sys.argv[1:3] == ['account', 'show']:
    if os.environ.get('FAKE_AZ_LOGGED_IN') == '0':
        sys.stderr.write("ERROR: Please run 'az login' to setup account.\\n")
        sys.exit(1)
    print(os.environ['FAKE_AZ_ACCOUNT'])
    sys.exit(0)
if sys.argv[1:4] == ['deployment', 'group', 'create']:
    rc = int(os.environ.get('FAKE_AZ_DEPLOY_RC', '0'))
    if rc:
        sys.stderr.write('ERROR: InvalidTemplateDeployment\\n')
        sys.exit(rc)
    print(os.environ['FAKE_AZ_OUTPUTS'])
    sys.exit(0)
sys.exit(2)
'''


@pytest.fixture
def fake_az(tmp_path, monkeypatch):
    """A bin/ with the stand-in az as the whole PATH; returns its call log."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    script = bin_dir / 'az'
    script.write_text(FAKE_AZ.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / 'az-calls.jsonl'
    monkeypatch.setenv('PATH', str(bin_dir))
    monkeypatch.setenv('FAKE_AZ_LOG', str(log))
    monkeypatch.setenv('FAKE_AZ_ACCOUNT', json.dumps(ACCOUNT))
    monkeypatch.setenv('FAKE_AZ_OUTPUTS', json.dumps(OUTPUTS))
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path / 'home'))
    return log


def calls(log):
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def parse_args(argv):
    parser = argparse.ArgumentParser(prog='clusterproof')
    deploy.add_parser(parser.add_subparsers(dest='command'))
    return parser.parse_args(['deploy', *argv])


def run(argv):
    return deploy.run(parse_args(argv))


def sourced(env_file, names):
    """The variables as a shell sees them after `source env_file`."""
    script = f'source {env_file}; ' + '; '.join(
        f'printf "%s\\n" "${name}"' for name in names)
    out = subprocess.run(['/bin/bash', '-c', script], capture_output=True,
                         text=True, check=True, env={})
    return out.stdout.splitlines()


def test_deploys_the_template_and_writes_the_env_file(fake_az, tmp_path,
                                                     capsys):
    assert run(['--resource-group', 'rg-hpc',
                '--principal-id', NODES_IDENTITY]) == 0

    assert calls(fake_az) == [
        ['account', 'show', '--output', 'json'],
        ['deployment', 'group', 'create', '--resource-group', 'rg-hpc',
         '--name', 'clusterproof', '--template-file', str(deploy.TEMPLATE),
         '--parameters', f'principalId={NODES_IDENTITY}',
         '--query', 'properties.outputs', '--output', 'json'],
    ]
    env_file = tmp_path / 'home' / 'azure.env'
    names = ['DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID',
             'LOGS_DCR_STREAM_NAME', 'LOGS_WORKSPACE_ID']
    assert sourced(env_file, names) == [
        'https://clusterproof-dce-x1y2.eastus-1.ingest.monitor.azure.com',
        'dcr-5c1e0b3f9a8d4e7f8a6b2c4d1e3f5a7b',
        'Custom-ReFrameResults_CL',
        '7d3e2f1a-6b5c-4d8e-9f0a-1b2c3d4e5f6a',
    ]
    # Only the environment variables, not the informational outputs.
    assert 'workspaceResourceId' not in env_file.read_text()
    out, err = capsys.readouterr()
    assert 'export LOGS_DCR_RULE_ID=dcr-5c1e0b3f9a8d4e7f8a6b2c4d1e3f5a7b' in out
    assert 'hpc-acceptance' in err
    assert f'source {env_file}' in err


def test_template_is_the_repository_main_bicep():
    assert deploy.TEMPLATE.is_file()
    assert deploy.TEMPLATE.parts[-2:] == ('bicep', 'main.bicep')


def test_bicepparam_file_names_the_template(fake_az, tmp_path):
    params = tmp_path / 'site.bicepparam'
    params.write_text("using '../bicep/main.bicep'\n")
    env_file = tmp_path / 'elsewhere' / 'cluster-a.env'
    assert run(['-g', 'rg-hpc', '--parameters', str(params),
                '--location', 'westeurope', '--name', 'cp-westeurope',
                '--env-file', str(env_file)]) == 0

    assert calls(fake_az)[1] == [
        'deployment', 'group', 'create', '--resource-group', 'rg-hpc',
        '--name', 'cp-westeurope', '--parameters', str(params),
        '--parameters', 'location=westeurope',
        '--query', 'properties.outputs', '--output', 'json']
    assert sourced(env_file, ['LOGS_DCR_STREAM_NAME']) == [
        'Custom-ReFrameResults_CL']
    assert not (tmp_path / 'home' / 'azure.env').exists()


def test_missing_az_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    empty = tmp_path / 'empty-bin'
    empty.mkdir()
    monkeypatch.setenv('PATH', str(empty))
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path / 'home'))

    assert run(['-g', 'rg-hpc']) == 1
    err = capsys.readouterr().err
    assert "Azure CLI ('az') is not installed or not on PATH" in err
    assert 'install-azure-cli' in err
    assert not (tmp_path / 'home').exists()


def test_not_logged_in_stops_before_deploying(fake_az, tmp_path, monkeypatch,
                                              capsys):
    monkeypatch.setenv('FAKE_AZ_LOGGED_IN', '0')
    assert run(['-g', 'rg-hpc']) == 1
    assert calls(fake_az) == [['account', 'show', '--output', 'json']]
    err = capsys.readouterr().err
    assert "not logged in: run 'az login'" in err
    assert "Please run 'az login' to setup account." in err
    assert not (tmp_path / 'home' / 'azure.env').exists()


def test_failed_deployment_keeps_the_old_env_file(fake_az, tmp_path,
                                                  monkeypatch, capsys):
    env_file = tmp_path / 'home' / 'azure.env'
    env_file.parent.mkdir()
    env_file.write_text('export LOGS_DCR_RULE_ID=dcr-old\n')
    monkeypatch.setenv('FAKE_AZ_DEPLOY_RC', '3')

    assert run(['-g', 'rg-hpc']) == 1
    assert env_file.read_text() == 'export LOGS_DCR_RULE_ID=dcr-old\n'
    assert 'failed (exit 3); nothing written' in capsys.readouterr().err


def test_missing_output_is_named(fake_az, tmp_path, monkeypatch, capsys):
    partial = {k: v for k, v in OUTPUTS.items() if k != 'LOGS_WORKSPACE_ID'}
    monkeypatch.setenv('FAKE_AZ_OUTPUTS', json.dumps(partial))
    assert run(['-g', 'rg-hpc']) == 1
    assert 'no output LOGS_WORKSPACE_ID' in capsys.readouterr().err
    assert not (tmp_path / 'home' / 'azure.env').exists()


def test_dry_run_prints_the_command_and_calls_nothing(fake_az, tmp_path,
                                                      capsys):
    assert run(['-g', 'rg hpc', '--principal-id', NODES_IDENTITY,
                '--dry-run']) == 0
    assert calls(fake_az) == []
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "az deployment group create --resource-group 'rg hpc' "
        f'--name clusterproof --template-file {deploy.TEMPLATE} '
        f'--parameters principalId={NODES_IDENTITY} '
        '--query properties.outputs --output json')
    assert f"written to {tmp_path / 'home' / 'azure.env'}" in out
    assert not (tmp_path / 'home').exists()


@pytest.mark.parametrize('argv, message', [
    (['--principal-id', 'nodes-identity'], 'must be an object id (a GUID)'),
    (['--parameters', 'no/such.bicepparam'], 'parameters file not found'),
    (['--parameters', 'bicep/main.bicep'], 'wants a .bicepparam file'),
])
def test_usage_errors_exit_2(fake_az, argv, message, capsys):
    assert run(['-g', 'rg-hpc', *argv]) == 2
    assert message in capsys.readouterr().err
    assert calls(fake_az) == []


def test_resource_group_is_required(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_args([])
    assert exited.value.code == 2
    assert '--resource-group' in capsys.readouterr().err


def test_default_env_file_is_under_the_clusterproof_home(tmp_path,
                                                         monkeypatch):
    monkeypatch.delenv('CLUSTERPROOF_HOME', raising=False)
    monkeypatch.setenv('HOME', str(tmp_path))
    assert deploy.default_env_file() == tmp_path / '.clusterproof' / 'azure.env'
    monkeypatch.setenv('CLUSTERPROOF_HOME', str(tmp_path / 'state'))
    assert deploy.default_env_file() == tmp_path / 'state' / 'azure.env'


def test_env_file_values_reach_the_shell_verbatim(tmp_path):
    args = parse_args(['-g', 'rg-hpc'])
    odd = {'DATA_COLLECTION_ENDPOINT': "https://x.ingest.monitor.azure.com/a b",
           'LOGS_DCR_RULE_ID': "dcr-$HOME'`id`"}
    env_file = tmp_path / 'azure.env'
    env_file.write_text(deploy.env_file_text(odd, args))
    assert sourced(env_file, list(odd)) == list(odd.values())
