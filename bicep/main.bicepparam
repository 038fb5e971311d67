// Example parameters for main.bicep. Copy this file, fill in principalId and pass it with
//   scripts/clusterproof deploy --resource-group RG --parameters my.bicepparam
using 'main.bicep'

// Object (principal) id of the cluster nodes' managed identity, e.g.
//   az identity show -g RG -n NAME --query principalId -o tsv
param principalId = ''
param principalType = 'ServicePrincipal'
param grantQueryAccess = true
// acceptance --report-to-azure: the "Azure Impact Reporter" role on the
// subscription (its id: az role definition list --name "Azure Impact Reporter"
// --query "[0].name" -o tsv); the subscription must be onboarded to Guest
// Health Reporting first (scripts/guest_health/README.md)
param grantImpactReporter = false
param impactReporterRoleId = ''

param namePrefix = 'clusterproof'
param retentionInDays = 90

// Reuse a workspace instead of creating one:
//   '/subscriptions/SUB/resourceGroups/RG/providers/Microsoft.OperationalInsights/workspaces/NAME'
param existingWorkspaceResourceId = ''

param useDataCollectionEndpoint = true
param deploySavedFunctions = true
param deployWorkbook = true
param deployRegressionAlert = true
param alertActionGroupIds = []
param alertSeverity = 2

param tags = {
  project: 'clusterproof'
}
