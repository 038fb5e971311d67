"""A number compared after its run (the one judge, config/results/rows/
judge.py, gave it its verdict before), in pure functions shared by
acceptance, the report and the tests (the KQL of bicep/queries/ says the
same in Log Analytics):

- peers.py: a node against the other nodes of the same run;
- baseline.py: a number against the site's own history (`clusterproof
  baseline`), beside the published references;
- common_mode.py: the same failure on most nodes of a partition is a
  finding about the partition (configuration, software), not N bad nodes.
"""
