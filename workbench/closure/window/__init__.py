"""Span windows and the gate: `spans` (spans, handles, the closure check), `cycle` (the window
every manager is), `gate` (the gate's one rule: proposal, margin, units), `managers` (relevance,
gate, atomic, tombstone, DSGC windows), `fastgate` (the gate's compiled replay of long logs),
`agent` (the seeded agent simulator), `report`, `notes` and `charts` (its summaries)."""
