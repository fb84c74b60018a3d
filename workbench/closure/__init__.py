"""Referential closure for tool-call windows (seed 002).

`spans` (spans, handles, the closure check), `managers` (relevance, gate, atomic, tombstone,
DSGC windows), `agent` (the seeded agent simulator), `report` (summaries and charts), `cli`.
"""
