"""The Azure side, read from the Bicep files with pycep-parser (no Bicep
compiler can be installed here): one column schema behind the table, the DCR
stream and the Python rows; the least-privilege roles; the outputs that
clusterproof reads as environment variables."""
import json
import re

import pytest

from tests.support.bicep_templates import (BICEP, SCHEMA_FILE, Template,
                                           accessor_path, body, schema,
                                           template, workbook_content)

BICEP_FILES = sorted(BICEP.rglob('*.bicep'))
KQL_FILES = sorted((BICEP / 'queries').glob('*.kql'))

API_VERSIONS = {
    'Microsoft.OperationalInsights/workspaces': '2025-07-01',
    'Microsoft.OperationalInsights/workspaces/tables': '2025-07-01',
    'Microsoft.OperationalInsights/workspaces/savedSearches': '2025-07-01',
    'Microsoft.Insights/dataCollectionEndpoints': '2024-03-11',
    'Microsoft.Insights/dataCollectionRules': '2024-03-11',
    'Microsoft.Authorization/roleAssignments': '2022-04-01',
    'Microsoft.Insights/workbooks': '2023-06-01',
    'Microsoft.Insights/scheduledQueryRules': '2023-12-01',
}
# Built-in role definition ids (Azure built-in roles reference).
MONITORING_METRICS_PUBLISHER = '3913510d-42f4-4e42-8a64-420c390055eb'
LOG_ANALYTICS_READER = '73c42c96-874c-492b-b04d-ab87d138a893'
ENV_OUTPUTS = ['DATA_COLLECTION_ENDPOINT', 'LOGS_DCR_RULE_ID',
               'LOGS_DCR_STREAM_NAME', 'LOGS_WORKSPACE_ID']
# Reserved column names of the Logs Ingestion API docs (compared ignoring case).
RESERVED_COLUMNS = {'id', '_resourceid', '_subscriptionid', 'tenantid', 'type',
                    'uniqueid', 'title', 'resource', 'resourceid',
                    'resourcename', 'resourcetype', 'subscriptionid'}
# Column types both a custom table and a DCR stream declaration accept.
COLUMN_TYPES = {'string', 'int', 'long', 'real', 'boolean', 'datetime',
                'dynamic'}
# The base first: every other query reads it (as a let of the same name).
QUERIES = ['results', 'latest_by_node', 'trends', 'regressions', 'failures',
           'compare_clusters', 'node_outliers', 'share_of_reference',
           'run_summary', 'what_changed']


def condition(resource: dict):
    return resource['config'].get('condition')


def role_id(tpl: Template, assignment: dict) -> str:
    role = body(assignment)['properties']['roleDefinitionId']['function']
    assert role['type'] == 'subscription_resource_id'
    assert role['parameters']['resource_type'] == \
        'Microsoft.Authorization/roleDefinitions'
    return tpl.resolve(role['parameters']['resource_name_1'])


def table_columns() -> list[dict]:
    _, table = template('modules/results_table.bicep').only(
        'Microsoft.OperationalInsights/workspaces/tables')
    return template('modules/results_table.bicep').resolve(
        body(table)['properties']['schema']['columns'])


def stream_declarations() -> dict:
    tpl = template('modules/ingestion.bicep')
    _, rule = tpl.only('Microsoft.Insights/dataCollectionRules')
    return tpl.resolve(body(rule)['properties']['streamDeclarations'])


# --- every file -----------------------------------------------------------

def test_the_templates_are_all_there():
    names = {path.relative_to(BICEP).as_posix() for path in BICEP_FILES}
    assert names == {'main.bicep', 'modules/workspace.bicep',
                     'modules/results_table.bicep',
                     'modules/saved_functions.bicep',
                     'modules/ingestion.bicep', 'modules/workbook.bicep',
                     'modules/regression_alert.bicep',
                     'modules/impact_reporter.bicep'}


@pytest.mark.parametrize('path', BICEP_FILES,
                         ids=lambda p: p.relative_to(BICEP).as_posix())
def test_every_file_parses(path):
    tpl = template(path.relative_to(BICEP).as_posix())
    assert tpl.section('resources') or tpl.section('modules')


def test_api_versions_are_the_current_stable_ones():
    seen = {}
    for path in BICEP_FILES:
        tpl = template(path.relative_to(BICEP).as_posix())
        for res in tpl.section('resources').values():
            seen.setdefault(res['type'], set()).add(res['api_version'])
    assert seen == {type_: {version} for type_, version in API_VERSIONS.items()}


def test_main_modules_exist():
    modules = template('main.bicep').doc['modules']
    assert set(modules) == {'newWorkspace', 'resultsTable', 'savedFunctions',
                            'ingestion', 'workbook', 'regressionAlert',
                            'impactReporter'}
    for module in modules.values():
        assert (BICEP / module['detail']['path']).is_file()


# --- workspace -------------------------------------------------------------

def test_new_workspace_has_local_auth_disabled_and_retention_parameter():
    tpl = template('modules/workspace.bicep')
    _, workspace = tpl.only('Microsoft.OperationalInsights/workspaces')
    assert workspace['existing'] is False
    props = body(workspace)['properties']
    assert props['features']['disableLocalAuth'] is True
    assert props['retentionInDays'] == 'retentionInDays'
    assert tpl.parameters['retentionInDays']['type'] == 'int'

    main = template('main.bicep')
    module = body(main.doc['modules']['newWorkspace'])
    assert module['params']['retentionInDays'] == 'retentionInDays'
    assert main.parameters['retentionInDays']['default'] == 90


def test_an_existing_workspace_can_be_used_instead():
    main = template('main.bicep')
    assert main.parameters['existingWorkspaceResourceId']['default'] == ''
    assert 'existingWorkspaceResourceId' in json.dumps(
        main.variables['useExistingWorkspace'])
    new_workspace = main.doc['modules']['newWorkspace']
    assert condition(new_workspace) == {
        'operator': {'type': 'not', 'operands': {
            'bool_value': 'useExistingWorkspace'}}}
    # The table goes into whichever workspace, in that workspace's group.
    table_module = main.doc['modules']['resultsTable']
    assert condition(table_module) is None
    scope = body(table_module)['scope']['function']
    assert scope['parameters'] == {'subscription_id': 'workspaceSubscriptionId',
                                   'resource_group_name':
                                       'workspaceResourceGroup'}
    assert body(table_module)['params']['workspaceName'] == \
        'targetWorkspaceName'


# --- one schema behind table, stream and Python rows ------------------------

def test_table_is_analytics_and_its_columns_come_from_the_schema_file():
    tpl = template('modules/results_table.bicep')
    loads = [var['value']['function'] for var in tpl.variables.values()
             if isinstance(var['value'], dict) and
             var['value'].get('function', {}).get('type') ==
             'load_json_content']
    assert [tpl.loaded_file(load) for load in loads] == [SCHEMA_FILE]

    _, table = tpl.only('Microsoft.OperationalInsights/workspaces/tables')
    props = tpl.resolve(body(table))['properties']
    assert tpl.resolve(body(table)['name']) == 'ReFrameResults_CL'
    assert props['plan'] == 'Analytics'
    assert props['schema']['name'] == 'ReFrameResults_CL'
    assert props['schema']['columns'] == [
        {'name': c['name'], 'type': c['type'], 'description': c['description']}
        for c in schema()['columns']]


def test_dcr_is_direct_and_declares_the_schema_stream():
    tpl = template('modules/ingestion.bicep')
    _, rule = tpl.only('Microsoft.Insights/dataCollectionRules')
    assert body(rule)['kind'] == 'Direct'
    assert stream_declarations() == {'Custom-ReFrameResults_CL': {'columns': [
        {'name': c['name'], 'type': c['type']} for c in schema()['columns']]}}


def test_data_flow_goes_from_the_stream_to_the_custom_table():
    tpl = template('modules/ingestion.bicep')
    _, rule = tpl.only('Microsoft.Insights/dataCollectionRules')
    props = body(rule)['properties']
    [flow] = tpl.resolve(props['dataFlows'])
    assert flow['outputStream'] == 'Custom-' + schema()['table']
    assert flow['outputStream'] == 'Custom-ReFrameResults_CL'
    assert flow['streams'] == [schema()['stream']]
    destinations = tpl.resolve(props['destinations'])['logAnalytics']
    assert flow['destinations'] == [d['name'] for d in destinations]
    assert [d['workspaceResourceId'] for d in destinations] == \
        ['workspaceResourceId']
    assert 'workspaceResourceId' in tpl.parameters

    transform = flow['transformKql']
    assert transform.startswith('source\n')
    assert set(re.findall(r'\b(?:check_\w+|TimeGenerated)\b', transform)) == \
        {'TimeGenerated', 'check_job_completion_time'}


def test_table_stream_and_python_rows_have_the_same_columns():
    from config.results.rows.schema import column_names
    table = table_columns()
    stream = stream_declarations()['Custom-ReFrameResults_CL']['columns']
    assert [c['name'] for c in table] == [c['name'] for c in stream] == \
        column_names()
    assert [c['type'] for c in table] == [c['type'] for c in stream]


def test_column_names_obey_log_analytics_rules():
    columns = table_columns()
    names = [c['name'] for c in columns]
    assert 0 < len(names) <= 500
    for name in names:
        assert re.fullmatch(r'[A-Za-z][A-Za-z0-9_]*', name), name
        assert len(name) <= 45, name
        assert name.lower() not in RESERVED_COLUMNS, name
    assert len({n.lower() for n in names}) == len(names)
    assert {c['type'] for c in columns} <= COLUMN_TYPES
    types = {c['name']: c['type'] for c in columns}
    assert types['TimeGenerated'] == 'datetime'
    # Log Analytics rewrites an old TimeGenerated; backfills keep this one.
    assert types['check_job_completion_time'] == 'datetime'


# --- least privilege ---------------------------------------------------------

def role_assignments() -> list[tuple[str, str, dict]]:
    found = []
    for path in BICEP_FILES:
        relative = path.relative_to(BICEP).as_posix()
        tpl = template(relative)
        for name, res in tpl.resources(
                'Microsoft.Authorization/roleAssignments').items():
            found.append((relative, role_id(tpl, res), res))
    return found


def test_monitoring_metrics_publisher_is_granted_on_the_dcr_only():
    tpl = template('modules/ingestion.bicep')
    rule_name, _ = tpl.only('Microsoft.Insights/dataCollectionRules')
    publishers = [(relative, res) for relative, role, res in role_assignments()
                  if role == MONITORING_METRICS_PUBLISHER]
    assert len(publishers) == 1
    relative, assignment = publishers[0]
    assert relative == 'modules/ingestion.bicep'
    assert body(assignment)['scope'] == rule_name
    assert body(assignment)['properties']['principalId'] == 'principalId'
    # No principal given: no assignment at all.
    assert condition(assignment) == {'operator': {'type': 'not', 'operands': {
        'bool_value': {'function': {'type': 'empty', 'parameters': {
            'item_to_test': 'principalId'}}}}}}
    main = template('main.bicep')
    assert body(main.doc['modules']['ingestion'])['params']['principalId'] == \
        'principalId'
    assert main.parameters['principalId']['default'] == ''


def test_log_analytics_reader_is_optional_and_on_the_workspace():
    tpl = template('modules/results_table.bicep')
    readers = [(relative, res) for relative, role, res in role_assignments()
               if role == LOG_ANALYTICS_READER]
    assert [relative for relative, _ in readers] == \
        ['modules/results_table.bicep']
    assignment = readers[0][1]
    workspace_name, workspace = tpl.only(
        'Microsoft.OperationalInsights/workspaces')
    assert workspace['existing'] is True
    assert body(assignment)['scope'] == workspace_name
    assert condition(assignment) is not None

    main = template('main.bicep')
    assert main.parameters['grantQueryAccess'] == {
        'decorators': main.parameters['grantQueryAccess']['decorators'],
        'type': 'bool', 'default': False}
    reader = body(main.doc['modules']['resultsTable'])['params'][
        'readerPrincipalId']
    assert reader['operator']['operands'] == {
        'condition': 'grantQueryAccess', 'true_value': 'principalId',
        'false_value': ''}


def test_no_other_roles_are_granted():
    # impactReporterRoleId: the role's id is the deployer's to give
    assert {role for _, role, _ in role_assignments()} == \
        {MONITORING_METRICS_PUBLISHER, LOG_ANALYTICS_READER,
         'impactReporterRoleId'}


def test_impact_reporter_is_optional_and_on_the_subscription():
    tpl = template('modules/impact_reporter.bicep')
    assert tpl.doc['globals']['scope'] == {'value': 'subscription'}
    [(relative, _, assignment)] = [
        found for found in role_assignments()
        if found[1] == 'impactReporterRoleId']
    assert relative == 'modules/impact_reporter.bicep'
    assert body(assignment)['properties']['principalId'] == 'principalId'
    main = template('main.bicep')
    assert main.parameters['grantImpactReporter']['default'] is False
    assert main.parameters['impactReporterRoleId']['default'] == ''
    module = main.doc['modules']['impactReporter']
    # main.bicep targets a resource group: the module goes to the
    # subscription
    assert body(module)['scope']['function']['type'] == 'subscription'

    def given(name):
        return {'operator': {'type': 'not_equals', 'operands': {
            'operand_1': name, 'operand_2': ''}}}
    assert condition(module) == {'operator': {'type': 'and', 'operands': {
        'operand_1': 'grantImpactReporter', 'operand_2': {'operator': {
            'type': 'and', 'operands': {
                'operand_1': given('principalId'),
                'operand_2': given('impactReporterRoleId')}}}}}}
    assert body(module)['params'] == {
        'principalId': 'principalId', 'principalType': 'principalType',
        'impactReporterRoleId': 'impactReporterRoleId'}


# --- outputs and options -----------------------------------------------------

def module_output(main: Template, output: str) -> tuple[Template, dict]:
    """The module output a main output forwards, with its template."""
    module_name, outputs, name = accessor_path(main.doc['outputs'][output]
                                               ['value'])
    assert outputs == 'outputs'
    module = main.doc['modules'][module_name]
    tpl = template(module['detail']['path'])
    return tpl, tpl.doc['outputs'][name]


def test_outputs_are_the_environment_variables():
    main = template('main.bicep')
    for name in ENV_OUTPUTS:
        assert main.doc['outputs'][name]['type'] == 'string'

    tpl, endpoint = module_output(main, 'DATA_COLLECTION_ENDPOINT')
    choice = endpoint['value']['operator']['operands']
    assert choice['condition'] == 'useDataCollectionEndpoint'
    assert accessor_path(choice['true_value']) == [
        'endpoint', 'properties', 'logsIngestion', 'endpoint']
    assert accessor_path(choice['false_value']) == [
        'rule', 'properties', 'endpoints', 'logsIngestion']

    tpl, rule_id = module_output(main, 'LOGS_DCR_RULE_ID')
    assert accessor_path(rule_id['value']) == [
        'rule', 'properties', 'immutableId']

    tpl, stream = module_output(main, 'LOGS_DCR_STREAM_NAME')
    assert tpl.resolve(stream['value']) == 'Custom-ReFrameResults_CL'

    tpl, workspace_id = module_output(main, 'LOGS_WORKSPACE_ID')
    assert accessor_path(workspace_id['value']) == [
        'workspace', 'properties', 'customerId']


@pytest.mark.parametrize('module, parameter', [
    ('savedFunctions', 'deploySavedFunctions'),
    ('workbook', 'deployWorkbook'),
    ('regressionAlert', 'deployRegressionAlert'),
])
def test_optional_pieces_have_a_parameter(module, parameter):
    main = template('main.bicep')
    assert main.parameters[parameter]['type'] == 'bool'
    assert main.parameters[parameter]['default'] is True
    assert condition(main.doc['modules'][module]) == parameter


def test_data_collection_endpoint_is_optional():
    tpl = template('modules/ingestion.bicep')
    _, endpoint = tpl.only('Microsoft.Insights/dataCollectionEndpoints')
    assert condition(endpoint) == 'useDataCollectionEndpoint'
    assert template('main.bicep').parameters['useDataCollectionEndpoint'][
        'default'] is True


# --- queries, functions, workbook, alert --------------------------------------

def test_the_shipped_queries_exist():
    assert sorted(path.stem for path in KQL_FILES) == sorted(QUERIES)


@pytest.mark.parametrize('path', KQL_FILES, ids=lambda p: p.stem)
def test_query_files_are_plain_kql_over_the_schema(path):
    text = path.read_text()
    first = text.splitlines()[0]
    assert re.fullmatch(rf'// name: {path.stem} - \S.{{20,}}', first), first
    assert '${' not in text
    # The Log Analytics editor runs the query under the cursor up to a blank line.
    assert '\n\n' not in text.strip()
    used = set(re.findall(r'\bcheck_\w+', text))
    assert used, path.name
    assert used <= {c['name'] for c in schema()['columns']}


@pytest.mark.parametrize('path', KQL_FILES, ids=lambda p: p.stem)
def test_only_the_base_reads_the_raw_table(path):
    text = path.read_text()
    if path.stem == 'results':
        assert 'ReFrameResults_CL' in text
        assert re.search(r'summarize arg_max\(TimeGenerated, \*\) by record_id',
                         text)
    else:
        assert 'ReFrameResults_CL' not in text
        assert 'clusterproof_results' in text


def test_latest_by_node_expands_the_node_list():
    text = (BICEP / 'queries' / 'latest_by_node.kql').read_text()
    assert 'mv-expand' in text and 'check_job_nodelist' in text


def composed(name: str) -> str:
    from scripts.query import library
    return library.compose(library.resolve(name))


def test_saved_functions_are_the_composed_query_files():
    tpl = template('modules/saved_functions.bicep')
    queries = tpl.resolve(tpl.variables['queries']['value'])
    assert [q['name'] for q in queries] == QUERIES
    _, functions = tpl.only(
        'Microsoft.OperationalInsights/workspaces/savedSearches')
    saved = tpl.resolve(functions['config'])
    assert [f['properties']['functionAlias'] for f in saved] == \
        [f'clusterproof_{name}' for name in QUERIES]
    texts = [f['properties']['query'] for f in saved]
    assert texts == [composed(name) for name in QUERIES]
    assert texts[0] == (BICEP / 'queries' / 'results.kql').read_text()


def test_alert_fires_on_any_regression_row():
    tpl = template('modules/regression_alert.bicep')
    _, alert = tpl.only('Microsoft.Insights/scheduledQueryRules')
    assert body(alert)['kind'] == 'LogAlert'
    props = tpl.resolve(body(alert)['properties'])
    [criterion] = props['criteria']['allOf']
    assert criterion['query'] == composed('regressions')
    assert (criterion['timeAggregation'], criterion['operator'],
            criterion['threshold']) == ('Count', 'GreaterThan', 0)
    assert props['scopes'] == ['workspaceResourceId']


def test_workbook_shows_trends_and_latest_verdict_per_node():
    tpl = template('modules/workbook.bicep')
    _, workbook = tpl.only('Microsoft.Insights/workbooks')
    assert body(workbook)['kind'] == 'shared'
    content = workbook_content()
    assert content['version'] == 'Notebook/1.0'
    queries = {item['name']: item['content'] for item in content['items']
               if item['type'] == 3}
    assert set(queries) == set(QUERIES) - {'results'}
    for name, item in queries.items():
        assert item['query'].startswith(composed(name))
    assert queries['trends']['visualization'] == 'timechart'
    assert "| where check_perf_var == '{Metric}'\n" in queries['trends'][
        'query']


def test_bicepparam_example_sets_parameters_of_main():
    text = (BICEP / 'main.bicepparam').read_text()
    assert re.search(r"^using 'main\.bicep'$", text, re.M)
    names = re.findall(r'^param (\w+) =', text, re.M)
    assert 'principalId' in names
    assert set(names) <= set(template('main.bicep').parameters)
