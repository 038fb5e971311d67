"""Every KQL text the Bicep deploys (saved functions, each workbook tile as
workbook.bicep composes it, the alert) and the DCR transformation, checked by
Kusto.Language against the columns of bicep/results_schema.json: no syntax
error, no unknown name, no type error."""
import datetime as dt

import pytest

from scripts.query import library
from tests.support.bicep_templates import (BICEP, body, schema, template,
                                           workbook_content)


def table_columns() -> list[dict]:
    return [{'name': c['name'], 'type': c['type']}
            for c in schema()['columns']]


def deployed_queries() -> dict[str, str]:
    """What Log Analytics will be asked to run, by where it is deployed."""
    texts = {}
    tpl = template('modules/saved_functions.bicep')
    _, functions = tpl.only(
        'Microsoft.OperationalInsights/workspaces/savedSearches')
    for saved in tpl.resolve(functions['config']):
        texts[f"function {saved['properties']['functionAlias']}"] = \
            saved['properties']['query']
    for item in workbook_content()['items']:
        if item['type'] == 3:
            texts[f"workbook tile {item['name']}"] = item['content']['query']
        if item['type'] == 9:
            for parameter in item['content']['parameters']:
                if 'query' in parameter:
                    texts[f"workbook parameter {parameter['name']}"] = \
                        parameter['query']
    alert_tpl = template('modules/regression_alert.bicep')
    _, alert = alert_tpl.only('Microsoft.Insights/scheduledQueryRules')
    props = alert_tpl.resolve(body(alert)['properties'])
    for index, criterion in enumerate(props['criteria']['allOf']):
        texts[f'alert criterion {index}'] = criterion['query']
    return texts


@pytest.fixture(scope='module')
def verdicts(kusto) -> dict[str, list[dict]]:
    table = schema()['table']
    found = kusto(deployed_queries(), {table: table_columns()})
    # The DCR transformation reads the stream, always named `source`.
    found.update(kusto(
        {'dcr transform': (BICEP / 'dcr_transform.kql').read_text()},
        {'source': table_columns()}))
    return found


EXPECTED = (
    [f'function clusterproof_{name}' for name in library.shipped()] +
    [f'workbook tile {name}' for name in library.shipped()
     if name != library.BASE_NAME] +
    ['workbook parameter Metric', 'alert criterion 0', 'dcr transform'])


def test_every_deployed_query_is_checked(verdicts):
    assert sorted(verdicts) == sorted(EXPECTED)


@pytest.mark.parametrize('where', EXPECTED)
def test_kusto_language_finds_no_error(verdicts, where):
    assert verdicts[where] == []


def test_the_shipped_files_as_the_cli_composes_them(kusto):
    texts = {name: library.compose(query)
             for name, query in library.shipped().items()}
    table = schema()['table']
    assert kusto(texts, {table: table_columns()}) == \
        {name: [] for name in texts}


def test_filters_keep_the_queries_valid(kusto):
    filters = library.Filters(
        since=dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc),
        cluster="prod's", partition='hbv4')
    text = library.compose(library.resolve('trends'), filters)
    table = schema()['table']
    assert kusto({'trends': text}, {table: table_columns()}) == \
        {'trends': []}


def test_the_validator_rejects_what_log_analytics_would(kusto):
    """`latest` is a reserved word (the bug regressions.kql once had); an
    unknown column; a string added to a number; the raw table under a name
    the schema does not have."""
    table = schema()['table']
    errors = kusto({
        'reserved': f'let latest = {table} | take 1;\nlatest',
        'unknown': f'{table} | where no_such_column > 1',
        'types': f'{table} | extend x = cluster + 1',
        'table': 'ReFrameResults | take 1',
    }, {table: table_columns()})
    assert all(errors[name] for name in errors), errors
    assert any('no_such_column' in e['message'] for e in errors['unknown'])
