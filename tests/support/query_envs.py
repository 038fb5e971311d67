"""The CLI's environment for a query store: local alone, or with the
loopback Log Analytics answering from the same store."""
import json

from scripts.query import local, output
from tests.support.helpers import suite_env


def local_env(home):
    env = suite_env(home)
    env.pop('LOGS_WORKSPACE_ID', None)
    return env


def cloud_env(home, fake, workspace: bool = True) -> dict:
    """The CLI's environment for the loopback Log Analytics: its query API
    answers by running the KQL it receives on the store under *home*."""
    con = local.connect(home / 'results')
    fake.answer_query = lambda query, timespan: json.loads(
        output.as_json(local.run(con, query)))
    env = local_env(home)
    env.update({
        'LOGS_QUERY_ENDPOINT': fake.base_url,
        'IDENTITY_ENDPOINT': f'{fake.base_url}/msi/token',
        'IDENTITY_HEADER': fake.identity_header,
    })
    if workspace:
        env['LOGS_WORKSPACE_ID'] = fake.workspace_id
    return env
