// The shipped KQL queries as workspace functions (clusterproof_<name>), loaded from the same .kql
// files that 'clusterproof query' runs. clusterproof_results is the base every query reads (each
// row once, by record_id); each other function carries the base as a let of the same name, so it
// runs alone too (as 'clusterproof query' composes it).

@description('Name of the workspace, in this module\'s resource group.')
param workspaceName string

var resultsQuery = loadTextContent('../queries/results.kql')
var resultsLet = 'let clusterproof_results = ${resultsQuery};\n'
var latestByNodeQuery = loadTextContent('../queries/latest_by_node.kql')
var trendsQuery = loadTextContent('../queries/trends.kql')
var regressionsQuery = loadTextContent('../queries/regressions.kql')
var failuresQuery = loadTextContent('../queries/failures.kql')
var compareClustersQuery = loadTextContent('../queries/compare_clusters.kql')
var nodeOutliersQuery = loadTextContent('../queries/node_outliers.kql')
var shareOfReferenceQuery = loadTextContent('../queries/share_of_reference.kql')
var runSummaryQuery = loadTextContent('../queries/run_summary.kql')
var whatChangedQuery = loadTextContent('../queries/what_changed.kql')

var queries = [
  {
    name: 'results'
    query: resultsQuery
  }
  {
    name: 'latest_by_node'
    query: '${resultsLet}${latestByNodeQuery}'
  }
  {
    name: 'trends'
    query: '${resultsLet}${trendsQuery}'
  }
  {
    name: 'regressions'
    query: '${resultsLet}${regressionsQuery}'
  }
  {
    name: 'failures'
    query: '${resultsLet}${failuresQuery}'
  }
  {
    name: 'compare_clusters'
    query: '${resultsLet}${compareClustersQuery}'
  }
  {
    name: 'node_outliers'
    query: '${resultsLet}${nodeOutliersQuery}'
  }
  {
    name: 'share_of_reference'
    query: '${resultsLet}${shareOfReferenceQuery}'
  }
  {
    name: 'run_summary'
    query: '${resultsLet}${runSummaryQuery}'
  }
  {
    name: 'what_changed'
    query: '${resultsLet}${whatChangedQuery}'
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
