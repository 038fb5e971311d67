"""The local store: one append-only file per session (files.py), the
sessions it holds (sessions.py), and the exact form its writer gives a row
(verbatim.py)."""
