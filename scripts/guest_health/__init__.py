"""Guest Health Reporting: tell Azure about a confirmed bad node
(`clusterproof acceptance --report-to-azure`) and follow what Azure did
(`clusterproof azure-reports`). README.md beside this file explains it."""
