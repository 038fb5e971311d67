// The shipped KQL queries as workspace functions (clusterproof_<name>), loaded from the same .kql
// files that 'clusterproof query' runs. clusterproof_results is the base every query reads (each
// row once, by record_id); each other function carries the base as a let of the same name, so it
// runs alone too (as 'clusterproof query' composes it).

@description('Name of the workspace, in this module\'s resource group.')
param workspaceName string

var resultsQuery = loadTextContent('../queries/results.kql')
var resultsLet = 'let clusterproof_results = ${resultsQuery};\n'
var latest_by_node = loadTextContent('../queries/latest_by_node.kql')
var trends = loadTextContent('../queries/trends.kql')
var regressions = loadTextContent('../queries/regressions.kql')
var failures = loadTextContent('../queries/failures.kql')
var compare_clusters = loadTextContent('../queries/compare_clusters.kql')
var node_outliers = loadTextContent('../queries/node_outliers.kql')
var share_of_reference = loadTextContent('../queries/share_of_reference.kql')
var run_summary = loadTextContent('../queries/run_summary.kql')

var queries = [
  {
    name: 'results'
    query: resultsQuery
  }
  {
    name: 'latest_by_node'
    query: '${resultsLet}${latest_by_node}'
  }
  {
    name: 'trends'
    query: '${resultsLet}${trends}'
  }
  {
    name: 'regressions'
    query: '${resultsLet}${regressions}'
  }
  {
    name: 'failures'
    query: '${resultsLet}${failures}'
  }
  {
    name: 'compare_clusters'
    query: '${resultsLet}${compare_clusters}'
  }
  {
    name: 'node_outliers'
    query: '${resultsLet}${node_outliers}'
  }
  {
    name: 'share_of_reference'
    query: '${resultsLet}${share_of_reference}'
  }
  {
    name: 'run_summary'
    query: '${resultsLet}${run_summary}'
  }
]

resource workspace 'Microsoft.OperationalInsights/workspaces@2025-07-01' existing = {
  name: workspaceName
}

resource functions 'Microsoft.OperationalInsights/workspaces/savedSearches@2025-07-01' = [for query in queries: {
  parent: workspace
  name: 'clusterproof_${query.name}'
  properties: {
    category: 'clusterproof'
    displayName: 'clusterproof ${query.name}'
    functionAlias: 'clusterproof_${query.name}'
    query: query.query
    version: 2
  }
}]
