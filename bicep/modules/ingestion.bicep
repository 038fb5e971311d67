// Data collection endpoint and rule that turn Logs Ingestion API calls into rows of the results
// table, and the one role the cluster nodes need to send them.

@description('Region of the destination workspace: endpoint, rule and workspace share one region.')
param location string

param namePrefix string

@description('Resource id of the workspace that holds the results table.')
param workspaceResourceId string

@description('Create a data collection endpoint and send through it; false: use the rule\'s own endpoint.')
param useDataCollectionEndpoint bool = true

@description('Object id of the identity that sends results (the cluster nodes\' managed identity); empty: no role assignment.')
param principalId string = ''

@allowed([
  'ServicePrincipal'
  'User'
  'Group'
])
param principalType string = 'ServicePrincipal'

param tags object = {}

var schema = loadJsonContent('../results_schema.json')
var monitoringMetricsPublisherRoleId = '3913510d-42f4-4e42-8a64-420c390055eb'
var destinationName = 'resultsWorkspace'

resource endpoint 'Microsoft.Insights/dataCollectionEndpoints@2024-03-11' = if (useDataCollectionEndpoint) {
  name: '${namePrefix}-dce'
  location: location
  tags: tags
  properties: {
    description: 'Logs ingestion endpoint for clusterproof results.'
    networkAcls: {
      publicNetworkAccess: 'Enabled'
    }
  }
}

resource rule 'Microsoft.Insights/dataCollectionRules@2024-03-11' = {
  name: '${namePrefix}-dcr'
  location: location
  tags: tags
  kind: 'Direct'
  properties: {
    description: 'clusterproof results: Logs Ingestion API stream to the results table.'
    dataCollectionEndpointId: useDataCollectionEndpoint ? endpoint.id : null
    streamDeclarations: {
      '${schema.stream}': {
        columns: [for column in schema.columns: {
          name: column.name
          type: column.type
        }]
      }
    }
    destinations: {
      logAnalytics: [
        {
          name: destinationName
          workspaceResourceId: workspaceResourceId
        }
      ]
    }
    dataFlows: [
      {
        streams: [
          schema.stream
        ]
        destinations: [
          destinationName
        ]
        transformKql: loadTextContent('../dcr_transform.kql')
        outputStream: 'Custom-${schema.table}'
      }
    ]
  }
}

// Sending logs needs this role on the rule itself; nothing else in the subscription.
resource publisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(principalId)) {
  name: guid(rule.id, principalId, monitoringMetricsPublisherRoleId)
  scope: rule
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisherRoleId)
    principalId: principalId
    principalType: principalType
    description: 'clusterproof: send results through this data collection rule'
  }
}

output logsIngestionEndpoint string = useDataCollectionEndpoint ? endpoint!.properties.logsIngestion.endpoint : rule.properties.endpoints.logsIngestion
output immutableId string = rule.properties.immutableId
output streamName string = schema.stream
output dataCollectionRuleId string = rule.id
