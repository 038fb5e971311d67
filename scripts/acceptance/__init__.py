"""`clusterproof acceptance`: every node measured, bad nodes named.

- slurm.py: the scheduler's side (node states, health, drain);
- plan.py: which checks run per node, per node pair or once, as ReFrame
  command lines;
- findings.py: a finding and the words of the verdicts;
- verdicts.py: ReFrame's run report -> findings per node -> node verdicts;
- summary.py: the table, the JSON summary and the not-measured rows;
- session.py: one acceptance run from start to end.
"""
