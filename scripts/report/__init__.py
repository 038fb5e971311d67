"""`clusterproof report`: one self-contained HTML file (inline CSS, charts
as server-side SVG, no script, nothing fetched) built from the shipped
queries, from the local store or Log Analytics."""
