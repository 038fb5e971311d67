// clusterproof: everything on the Azure side in one resource group deployment.
// Log Analytics workspace (new, or an existing one by id), the ReFrameResults_CL table, a data
// collection endpoint and rule for the Logs Ingestion API, the least-privilege role for the cluster
// nodes, and (optional) saved KQL functions, a workbook and a regression alert.
// The outputs are the environment variables clusterproof reads; 'scripts/clusterproof deploy'
// writes them to an env file.

targetScope = 'resourceGroup'

@description('Region of a new workspace. The endpoint, rule, workbook and alert always follow the workspace\'s region.')
param location string = resourceGroup().location

@description('Prefix of the resource names.')
@minLength(3)
@maxLength(30)
param namePrefix string = 'clusterproof'

@description('Resource id of an existing Log Analytics workspace to hold the results table; empty: create one.')
param existingWorkspaceResourceId string = ''

@description('Name of the new workspace (unused with existingWorkspaceResourceId).')
param workspaceName string = '${namePrefix}-law'

@description('Days a new workspace keeps interactive data.')
@minValue(30)
@maxValue(730)
param retentionInDays int = 90

@description('Object (principal) id of the managed identity the cluster nodes send results with. It gets Monitoring Metrics Publisher on the data collection rule and nothing else. Empty: no role assignment.')
param principalId string = ''

@allowed([
  'ServicePrincipal'
  'User'
  'Group'
])
param principalType string = 'ServicePrincipal'

@description('Also give principalId Log Analytics Reader on the workspace, so that clusterproof query works from the cluster.')
param grantQueryAccess bool = false

@description('Also give principalId the "Azure Impact Reporter" role on this subscription, so that acceptance --report-to-azure can file Guest Health Reports (https://learn.microsoft.com/azure/azure-impact-reporting/guest-health-overview). The deploying user must be allowed to assign roles on the subscription.')
param grantImpactReporter bool = false

@description('With grantImpactReporter: the id (GUID) of the built-in "Azure Impact Reporter" role, from: az role definition list --name "Azure Impact Reporter" --query "[0].name" -o tsv')
param impactReporterRoleId string = ''

@description('Send through a data collection endpoint; false: use the data collection rule\'s own ingestion endpoint.')
param useDataCollectionEndpoint bool = true

@description('Save the shipped KQL queries as workspace functions (clusterproof_<name>).')
param deploySavedFunctions bool = true

@description('Deploy the results workbook (dashboard).')
param deployWorkbook bool = true

@description('Deploy the scheduled alert on performance regressions.')
param deployRegressionAlert bool = true

@description('Action group resource ids the regression alert notifies.')
param alertActionGroupIds array = []

@minValue(0)
@maxValue(4)
param alertSeverity int = 2

param tags object = {}

var useExistingWorkspace = !empty(existingWorkspaceResourceId)
var existingWorkspaceIdParts = split(existingWorkspaceResourceId, '/')
var workspaceSubscriptionId = useExistingWorkspace ? existingWorkspaceIdParts[2] : subscription().subscriptionId
var workspaceResourceGroup = useExistingWorkspace ? existingWorkspaceIdParts[4] : resourceGroup().name
var targetWorkspaceName = useExistingWorkspace ? last(existingWorkspaceIdParts) : workspaceName

module newWorkspace 'modules/workspace.bicep' = if (!useExistingWorkspace) {
  name: '${namePrefix}-workspace'
  params: {
    name: workspaceName
    location: location
    retentionInDays: retentionInDays
    tags: tags
  }
}

// The table lives in the workspace's resource group, which is another one for an existing workspace.
module resultsTable 'modules/results_table.bicep' = {
  name: '${namePrefix}-results-table'
  scope: resourceGroup(workspaceSubscriptionId, workspaceResourceGroup)
  dependsOn: [
    newWorkspace
  ]
  params: {
    workspaceName: targetWorkspaceName
    readerPrincipalId: grantQueryAccess ? principalId : ''
    readerPrincipalType: principalType
  }
}

module savedFunctions 'modules/saved_functions.bicep' = if (deploySavedFunctions) {
  name: '${namePrefix}-saved-functions'
  scope: resourceGroup(workspaceSubscriptionId, workspaceResourceGroup)
  dependsOn: [
    resultsTable
  ]
  params: {
    workspaceName: targetWorkspaceName
  }
}

module ingestion 'modules/ingestion.bicep' = {
  name: '${namePrefix}-ingestion'
  params: {
    location: resultsTable.outputs.location
    namePrefix: namePrefix
    workspaceResourceId: resultsTable.outputs.workspaceResourceId
    useDataCollectionEndpoint: useDataCollectionEndpoint
    principalId: principalId
    principalType: principalType
    tags: tags
  }
}

// main.bicep targets a resource group; the role is granted on the
// subscription, so this module is deployed there (scope: subscription())
module impactReporter 'modules/impact_reporter.bicep' = if (grantImpactReporter && (principalId != '') && (impactReporterRoleId != '')) {
  name: '${namePrefix}-impact-reporter'
  scope: subscription()
  params: {
    principalId: principalId
    principalType: principalType
    impactReporterRoleId: impactReporterRoleId
  }
}

module workbook 'modules/workbook.bicep' = if (deployWorkbook) {
  name: '${namePrefix}-workbook'
  params: {
    location: resultsTable.outputs.location
    namePrefix: namePrefix
    workspaceResourceId: resultsTable.outputs.workspaceResourceId
    tags: tags
  }
}

module regressionAlert 'modules/regression_alert.bicep' = if (deployRegressionAlert) {
  name: '${namePrefix}-regression-alert'
  params: {
    location: resultsTable.outputs.location
    namePrefix: namePrefix
    workspaceResourceId: resultsTable.outputs.workspaceResourceId
    actionGroupIds: alertActionGroupIds
    severity: alertSeverity
    tags: tags
  }
}

output DATA_COLLECTION_ENDPOINT string = ingestion.outputs.logsIngestionEndpoint
output LOGS_DCR_RULE_ID string = ingestion.outputs.immutableId
output LOGS_DCR_STREAM_NAME string = ingestion.outputs.streamName
output LOGS_WORKSPACE_ID string = resultsTable.outputs.workspaceCustomerId
output workspaceResourceId string = resultsTable.outputs.workspaceResourceId
output dataCollectionRuleResourceId string = ingestion.outputs.dataCollectionRuleId
