"""`clusterproof deploy`: create the Azure side (bicep/main.bicep) with one
`az deployment group create`, and write its outputs to an env file to source.

The Azure CLI does the work and the authentication; this command checks that
it is there and logged in, builds the call, and keeps the outputs.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from config.results import settings
from config.results.store import files as store

TEMPLATE = Path(__file__).resolve().parents[2] / 'bicep' / 'main.bicep'
# The outputs of main.bicep that are environment variables clusterproof reads.
ENV_OUTPUTS = ['DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID',
               'LOGS_DCR_STREAM_NAME', 'LOGS_WORKSPACE_ID']
GUID = re.compile(r'^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$')

EXIT_FAILED = 1
EXIT_USAGE = 2


def default_env_file() -> Path:
    return settings.home().expanduser() / 'azure.env'


def add_parser(subparsers):
    parser = subparsers.add_parser(
        'deploy', help='deploy the Azure side and write its env file',
        description='Deploy bicep/main.bicep into a resource group with the '
                    'Azure CLI (az deployment group create): Log Analytics '
                    'workspace, results table, data collection endpoint and '
                    'rule, the role for the cluster nodes, saved queries, '
                    'workbook and alert. Needs `az` on PATH and `az login` '
                    'done. Writes DATA_COLLECTION_ENDPOINT, LOGS_DCR_RULE_ID, '
                    'LOGS_DCR_STREAM_NAME and LOGS_WORKSPACE_ID to an env '
                    'file: `source` it before running ReFrame or clusterproof.')
    parser.add_argument('--resource-group', '-g', required=True,
                        help='resource group to deploy into (must exist)')
    parser.add_argument('--location', '-l',
                        help='region of a new workspace (default: the '
                             "resource group's region)")
    parser.add_argument('--parameters', '-p', metavar='FILE.bicepparam',
                        help='parameters file (see bicep/main.bicepparam); '
                             'its `using` line names the template')
    parser.add_argument('--principal-id',
                        help="object id of the cluster nodes' managed "
                             'identity; it gets Monitoring Metrics Publisher '
                             'on the data collection rule')
    parser.add_argument('--name', default='clusterproof',
                        help='deployment name (default: %(default)s)')
    parser.add_argument('--env-file', type=Path, default=None,
                        help='where to write the exports (default: '
                             '$CLUSTERPROOF_HOME/azure.env, '
                             'CLUSTERPROOF_HOME defaulting to ~/.clusterproof)')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the az command and change nothing')
    parser.set_defaults(func=run)


def usage_error(args) -> str | None:
    """What is wrong with the arguments, or None."""
    if args.parameters:
        path = Path(args.parameters)
        if path.suffix != '.bicepparam':
            return f'--parameters wants a .bicepparam file, not {path}'
        if not path.is_file():
            return f'parameters file not found: {path}'
    if args.principal_id is not None and not GUID.match(args.principal_id):
        return (f'--principal-id must be an object id (a GUID), '
                f'not {args.principal_id!r}')
    return None


def deployment_command(args, az: str = 'az') -> list[str]:
    command = [az, 'deployment', 'group', 'create',
               '--resource-group', args.resource_group, '--name', args.name]
    if args.parameters:
        # A .bicepparam names its template in its `using` line; the CLI
        # refuses a --template-file that disagrees with it.
        command += ['--parameters', str(args.parameters)]
    else:
        command += ['--template-file', str(TEMPLATE)]
    if args.location:
        command += ['--parameters', f'location={args.location}']
    if args.principal_id:
        command += ['--parameters', f'principalId={args.principal_id}']
    return command + ['--query', 'properties.outputs', '--output', 'json']


def logged_in_account(az: str) -> dict | None:
    """The account `az` is logged in with, or None (message printed)."""
    shown = subprocess.run([az, 'account', 'show', '--output', 'json'],
                           capture_output=True, text=True)
    if shown.returncode != 0:
        print('clusterproof deploy: the Azure CLI is not logged in: run '
              "'az login' (or 'az login --identity' on a VM with a managed "
              'identity), then try again.', file=sys.stderr)
        detail = shown.stderr.strip()
        if detail:
            print(f'  az said: {detail}', file=sys.stderr)
        return None
    try:
        return json.loads(shown.stdout)
    except ValueError:
        print("clusterproof deploy: 'az account show' did not print JSON.",
              file=sys.stderr)
        return None


def env_values(outputs: dict) -> dict[str, str]:
    """{NAME: value} of the env outputs; KeyError names a missing one."""
    values = {}
    for name in ENV_OUTPUTS:
        if not isinstance(outputs, dict) or name not in outputs:
            raise KeyError(name)
        values[name] = str(outputs[name]['value'])
    return values


def env_file_text(values: dict[str, str], args) -> str:
    lines = [f'# Written by clusterproof deploy (deployment {args.name}, '
             f'resource group {args.resource_group}).']
    lines += [f'export {name}={shlex.quote(value)}'
              for name, value in values.items()]
    return '\n'.join(lines) + '\n'


def run(args) -> int:
    problem = usage_error(args)
    if problem:
        print(f'clusterproof deploy: {problem}', file=sys.stderr)
        return EXIT_USAGE
    env_file = args.env_file or default_env_file()
    if args.dry_run:
        print(shlex.join(deployment_command(args)))
        print(f'# outputs would be written to {env_file}')
        return 0

    if not args.env_file:
        store.check_home()   # an unusable home fails now, not after az
    az = shutil.which('az')
    if az is None:
        print("clusterproof deploy: the Azure CLI ('az') is not installed or "
              'not on PATH. Install it '
              '(https://learn.microsoft.com/cli/azure/install-azure-cli), '
              "run 'az login', then try again.", file=sys.stderr)
        return EXIT_FAILED
    account = logged_in_account(az)
    if account is None:
        return EXIT_FAILED
    print(f"Deploying to subscription {account.get('name')} "
          f"({account.get('id')}), resource group {args.resource_group}...",
          file=sys.stderr)

    # az reports progress and errors on stderr; let the user see them.
    deployed = subprocess.run(deployment_command(args, az),
                              stdout=subprocess.PIPE, text=True)
    if deployed.returncode != 0:
        print(f'clusterproof deploy: az deployment group create failed '
              f'(exit {deployed.returncode}); nothing written.',
              file=sys.stderr)
        return EXIT_FAILED
    try:
        values = env_values(json.loads(deployed.stdout))
    except ValueError:
        print('clusterproof deploy: the deployment outputs are not JSON.',
              file=sys.stderr)
        return EXIT_FAILED
    except KeyError as missing:
        print(f'clusterproof deploy: the deployment has no output '
              f'{missing.args[0]}; is bicep/main.bicep current?',
              file=sys.stderr)
        return EXIT_FAILED

    text = env_file_text(values, args)
    env_file.parent.mkdir(parents=True, exist_ok=True)
    env_file.write_text(text)
    sys.stdout.write(text)
    print(f'Wrote {env_file}; load it with: source {env_file}',
          file=sys.stderr)
    return 0
