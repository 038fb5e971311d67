"""Delivery to Azure Monitor's Logs Ingestion API: its settings
(ingestion.py), the live push (live_push.py), `clusterproof sync` (sync.py)
and `--verify` (verify.py), over one batching and retry path (shipping.py)
and the ledger of accepted rows (ledger.py)."""
