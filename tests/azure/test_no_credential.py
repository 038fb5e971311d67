"""A command that asks Log Analytics where no Azure identity can be found
says so in one line, with how to log in, and writes nothing to the home:
real azure-identity against the loopback managed-identity endpoint, which
refuses an identity header it did not issue."""
import subprocess
import sys

from config.results.azure import ingestion
from tests.support.helpers import REPO, suite_env

CLI = str(REPO / 'scripts' / 'clusterproof')


def test_query_without_a_credential_is_one_line(tmp_path, fake_azure):
    home = tmp_path / 'user'
    home.mkdir()
    env = suite_env(tmp_path / 'clusterproof', {
        **fake_azure.env(), 'HOME': str(home), 'TMPDIR': str(tmp_path),
        # no identity: the endpoint answers 401; no az, pwsh or azd on PATH
        'IDENTITY_HEADER': 'not-the-one-it-issued',
        'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'})
    for name in ('AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_CLIENT_SECRET',
                 'AZURE_FEDERATED_TOKEN_FILE', 'MSI_ENDPOINT'):
        env.pop(name, None)
    workspace = fake_azure.workspace_id
    result = subprocess.run(
        [sys.executable, CLI, 'query', 'trends', '--workspace', workspace],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert result.stdout == ''
    assert result.stderr == (
        f'clusterproof query: trends on Log Analytics workspace {workspace}: '
        f'{ingestion.NO_CREDENTIAL}\n')
    assert 'az login' in ingestion.NO_CREDENTIAL
    assert not fake_azure.issued        # no token was handed out
    # azure-identity's shared token cache (~/.IdentityService) is not made
    assert list(home.iterdir()) == []
