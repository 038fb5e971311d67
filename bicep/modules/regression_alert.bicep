// Scheduled log search alert that fires when the regressions query returns any row.

param location string
param namePrefix string

@description('Resource id of the workspace that holds the results table.')
param workspaceResourceId string

@description('Action groups to notify; empty: the alert only shows in Azure Monitor.')
param actionGroupIds array = []

@minValue(0)
@maxValue(4)
param severity int = 2

@description('How often the rule runs (ISO 8601 duration).')
param evaluationFrequency string = 'P1D'

// Log search alerts see a limited span of data (two days at most when this was written), so the
// alert's baseline is the earlier runs inside that span; the saved function and
// 'clusterproof query regressions' use the full 14-day baseline.
@description('Span of data the query sees (ISO 8601 duration).')
param queryTimeRange string = 'P2D'

param tags object = {}

// The query as 'clusterproof query regressions' runs it: the base (each record once) as a let.
var resultsQuery = loadTextContent('../queries/results.kql')
var resultsLet = 'let clusterproof_results = ${resultsQuery};\n'
var regressionsQuery = loadTextContent('../queries/regressions.kql')

resource alert 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${namePrefix}-regressions'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: '${namePrefix}: performance regressions'
    description: 'A metric fell more than 10% below its own trailing baseline, or failed its reference check.'
    severity: severity
    enabled: true
    scopes: [
      workspaceResourceId
    ]
    evaluationFrequency: evaluationFrequency
    windowSize: evaluationFrequency
    overrideQueryTimeRange: queryTimeRange
    // A custom table can take minutes to become queryable after it is created.
    skipQueryValidation: true
    criteria: {
      allOf: [
        {
          query: '${resultsLet}${regressionsQuery}'
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: false
    actions: {
      actionGroups: actionGroupIds
    }
  }
}

output alertRuleId string = alert.id
