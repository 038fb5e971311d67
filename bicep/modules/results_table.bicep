// The results table in the workspace (new or existing), its columns read from the one schema file,
// and optional read access for running clusterproof queries.

@description('Name of the workspace, in this module\'s resource group.')
param workspaceName string

@description('Principal that gets Log Analytics Reader on the workspace; empty: none.')
param readerPrincipalId string = ''

@allowed([
  'ServicePrincipal'
  'User'
  'Group'
])
param readerPrincipalType string = 'ServicePrincipal'

var schema = loadJsonContent('../results_schema.json')
var logAnalyticsReaderRoleId = '73c42c96-874c-492b-b04d-ab87d138a893'

resource workspace 'Microsoft.OperationalInsights/workspaces@2025-07-01' existing = {
  name: workspaceName
}

resource table 'Microsoft.OperationalInsights/workspaces/tables@2025-07-01' = {
  parent: workspace
  name: schema.table
  properties: {
    plan: 'Analytics'
    schema: {
      name: schema.table
      description: 'ReFrame test and performance results sent by clusterproof: one row per performance variable.'
      columns: [for column in schema.columns: {
        name: column.name
        type: column.type
        description: column.description
      }]
    }
  }
}

resource reader 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(readerPrincipalId)) {
  name: guid(workspace.id, readerPrincipalId, logAnalyticsReaderRoleId)
  scope: workspace
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', logAnalyticsReaderRoleId)
    principalId: readerPrincipalId
    principalType: readerPrincipalType
    description: 'clusterproof: query the results'
  }
}

output workspaceResourceId string = workspace.id
output workspaceCustomerId string = workspace.properties.customerId
output location string = workspace.location
output tableName string = table.name
