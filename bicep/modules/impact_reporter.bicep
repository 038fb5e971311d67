// The role Guest Health Reporting asks of the identity that files reports
// (clusterproof acceptance --report-to-azure): "Azure Impact Reporter" on the
// subscription the reports are made from ("Access management and role
// assignment", https://learn.microsoft.com/azure/azure-impact-reporting/guest-health-overview).
// The same page's onboarding (register Microsoft.Impact, have the subscription
// allow-listed by Azure) is not something a template can do.
targetScope = 'subscription'

@description('Object (principal) id of the identity that files the reports.')
param principalId string

@description('Type of that principal.')
param principalType string = 'ServicePrincipal'

@description('Id (GUID) of the built-in "Azure Impact Reporter" role definition: az role definition list --name "Azure Impact Reporter" --query "[0].name" -o tsv')
param impactReporterRoleId string

resource reporter 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(subscription().id, principalId, impactReporterRoleId)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', impactReporterRoleId)
    principalId: principalId
    principalType: principalType
  }
}
