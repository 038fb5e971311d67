"""A results row: its schema (schema.py) and how a test's perf records
become rows (builder.py)."""
