// Shared workbook (dashboard): metric trends per cluster, VM SKU and test; the latest verdict per
// node; node outliers of the latest runs, run summaries, regressions, failures and the cross-cluster
// comparison. Every query is a shipped .kql file, composed as 'clusterproof query' composes it: the
// base (each record once) as a let named clusterproof_results, then the query.

param location string
param namePrefix string

@description('Resource id of the workspace that holds the results table.')
param workspaceResourceId string

param tags object = {}

var workspaceType = 'microsoft.operationalinsights/workspaces'
var thirtyDaysMs = 2592000000
var metricFilter = '| where check_perf_var == \'{Metric}\'\n'

var resultsQuery = loadTextContent('../queries/results.kql')
var resultsLet = 'let clusterproof_results = ${resultsQuery};\n'
var trendsQuery = loadTextContent('../queries/trends.kql')
var latestByNodeQuery = loadTextContent('../queries/latest_by_node.kql')
var regressionsQuery = loadTextContent('../queries/regressions.kql')
var failuresQuery = loadTextContent('../queries/failures.kql')
var compareClustersQuery = loadTextContent('../queries/compare_clusters.kql')
var nodeOutliersQuery = loadTextContent('../queries/node_outliers.kql')
var shareOfReferenceQuery = loadTextContent('../queries/share_of_reference.kql')
var runSummaryQuery = loadTextContent('../queries/run_summary.kql')
var whatChangedQuery = loadTextContent('../queries/what_changed.kql')

var parameterItem = {
  type: 9
  name: 'parameters'
  content: {
    version: 'KqlParameterItem/1.0'
    style: 'pills'
    queryType: 0
    resourceType: workspaceType
    parameters: [
      {
        id: '5f0a2b6e-8c1d-4e3f-9a7b-1c2d3e4f5a60'
        version: 'KqlParameterItem/1.0'
        name: 'TimeRange'
        label: 'Time range'
        type: 4
        isRequired: true
        value: {
          durationMs: thirtyDaysMs
        }
        typeSettings: {
          selectableValues: [
            {
              durationMs: 86400000
            }
            {
              durationMs: 604800000
            }
            {
              durationMs: thirtyDaysMs
            }
            {
              durationMs: 7776000000
            }
          ]
        }
      }
      {
        id: '6a1b3c7f-9d2e-4f40-8b8c-2d3e4f5a6b71'
        version: 'KqlParameterItem/1.0'
        name: 'Metric'
        label: 'Metric'
        type: 2
        isRequired: true
        query: '${resultsLet}clusterproof_results\n| where isnotnull(check_perf_value)\n| distinct check_perf_var\n| order by check_perf_var asc'
        queryType: 0
        resourceType: workspaceType
        typeSettings: {
          showDefault: false
        }
      }
    ]
  }
}

var trendsItem = {
  type: 3
  name: 'trends'
  content: {
    version: 'KqlItem/1.0'
    title: 'Daily median of {Metric} per cluster, VM SKU and test'
    query: '${resultsLet}${trendsQuery}${metricFilter}| project day, series = strcat(cluster, \' \', vm_sku, \' \', test, \' \', device), median_value\n'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'timechart'
  }
}

var latestByNodeItem = {
  type: 3
  name: 'latest_by_node'
  content: {
    version: 'KqlItem/1.0'
    title: 'Latest verdict per node (failures first)'
    query: '${resultsLet}${latestByNodeQuery}| order by check_result asc, cluster asc, node asc\n'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var regressionsItem = {
  type: 3
  name: 'regressions'
  content: {
    version: 'KqlItem/1.0'
    title: 'Regressions: latest value against its trailing baseline, and failed references'
    query: '${resultsLet}${regressionsQuery}'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var failuresItem = {
  type: 3
  name: 'failures'
  content: {
    version: 'KqlItem/1.0'
    title: 'Failed tests (last 7 days)'
    query: '${resultsLet}${failuresQuery}'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var compareClustersItem = {
  type: 3
  name: 'compare_clusters'
  content: {
    version: 'KqlItem/1.0'
    title: '{Metric} across clusters and VM SKUs (last 30 days)'
    query: '${resultsLet}${compareClustersQuery}${metricFilter}'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var runSummaryItem = {
  type: 3
  name: 'run_summary'
  content: {
    version: 'KqlItem/1.0'
    title: 'Runs: tests passed and failed, nodes covered, the metric furthest below its reference'
    query: '${resultsLet}${runSummaryQuery}'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var nodeOutliersItem = {
  type: 3
  name: 'node_outliers'
  content: {
    version: 'KqlItem/1.0'
    title: 'Node outliers: nodes worse than the median of their peers in the same run'
    query: '${resultsLet}${nodeOutliersQuery}| where outlier\n'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var shareOfReferenceItem = {
  type: 3
  name: 'share_of_reference'
  content: {
    version: 'KqlItem/1.0'
    title: '{Metric}: % of reference per VM SKU and cluster'
    query: '${resultsLet}${shareOfReferenceQuery}${metricFilter}| where isnotnull(pct_of_reference)\n| project day, series = strcat(vm_sku, \' \', cluster, \' \', test, \' \', device), pct_of_reference\n'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'timechart'
  }
}

var whatChangedItem = {
  type: 3
  name: 'what_changed'
  content: {
    version: 'KqlItem/1.0'
    title: 'What changed on a node between its last passing and first failing run (kernel, image, drivers, firmware, physical host)'
    query: '${resultsLet}${whatChangedQuery}'
    size: 0
    queryType: 0
    resourceType: workspaceType
    timeContextFromParameter: 'TimeRange'
    visualization: 'table'
  }
}

var headerItem = {
  type: 1
  name: 'header'
  content: {
    json: '## Cluster acceptance results\nReFrame results sent by clusterproof to the ReFrameResults_CL table. Pick a metric to see its trend and how clusters compare.'
  }
}

var workbookContent = {
  version: 'Notebook/1.0'
  items: [
    headerItem
    parameterItem
    runSummaryItem
    trendsItem
    shareOfReferenceItem
    latestByNodeItem
    nodeOutliersItem
    regressionsItem
    whatChangedItem
    failuresItem
    compareClustersItem
  ]
  fallbackResourceIds: [
    workspaceResourceId
  ]
}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, workspaceResourceId, '${namePrefix}-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: '${namePrefix}: cluster acceptance results'
    category: 'workbook'
    sourceId: workspaceResourceId
    serializedData: string(workbookContent)
    version: 'Notebook/1.0'
  }
}

output workbookId string = workbook.id
