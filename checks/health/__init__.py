"""Node health around every test: pure functions from the job's samples
(checks/common/node_probe.sh) to rows, findings and the node's
fingerprint. The ReFrame side is checks/common/health_sampling.py."""
