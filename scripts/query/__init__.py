"""The KQL query library (bicep/queries/*.kql) and the two engines that run
it: DuckDB over the local store, and Log Analytics."""
