// The shipped KQL queries as workspace functions (clusterproof_<name>), loaded from the same .kql
// files that 'clusterproof query' runs.

@description('Name of the workspace, in this module\'s resource group.')
param workspaceName string

var queries = [
  {
    name: 'latest_by_node'
    query: loadTextContent('../queries/latest_by_node.kql')
  }
  {
    name: 'trends'
    query: loadTextContent('../queries/trends.kql')
  }
  {
    name: 'regressions'
    query: loadTextContent('../queries/regressions.kql')
  }
  {
    name: 'failures'
    query: loadTextContent('../queries/failures.kql')
  }
  {
    name: 'compare_clusters'
    query: loadTextContent('../queries/compare_clusters.kql')
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
