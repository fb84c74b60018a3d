"""Referential closure for tool-call traces (seed 002), in two rooms.

`closure.window`: span windows and the gate (spans and handles, the window cycle, the managers,
the gate's one rule, the seeded agent simulator, its report). `closure.logs`: agent message logs
at rest (read a wire format, check its closure, trim it closure-safely, write it back, compare
with other trimmers); it reads spans and handles from the window room, never the reverse.
`cli` is the `workbench closure` command over both.
"""
