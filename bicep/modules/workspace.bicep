// A new Log Analytics workspace that accepts Microsoft Entra ID (managed identity) access only.

@description('Workspace name.')
param name string

@description('Workspace region.')
param location string

@description('Days the workspace keeps interactive data.')
@minValue(30)
@maxValue(730)
param retentionInDays int

param tags object = {}

resource workspace 'Microsoft.OperationalInsights/workspaces@2025-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
    features: {
      disableLocalAuth: true
      enableLogAccessUsingOnlyResourcePermissions: true
    }
    publicNetworkAccessForIngestion: 'Enabled'
    publicNetworkAccessForQuery: 'Enabled'
  }
}

output resourceId string = workspace.id
