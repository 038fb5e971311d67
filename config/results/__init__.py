"""The results path, one sub-package per part: a perf record becomes a row
(rows), the ReFrame handlers keep it (handlers) in the local store (store)
and push it live to Azure Monitor, where ``clusterproof sync`` later ships
what is left (azure). settings.py reads every CLUSTERPROOF_* variable."""
