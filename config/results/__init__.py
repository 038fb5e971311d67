"""The results path: a perf record becomes a row (records), is kept in the
local store (store, sessions), pushed live (live_push over shipping) and later
shipped by ``clusterproof sync`` (backlog, ledger, verify)."""
