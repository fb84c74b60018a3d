"""Retention x selection: the streaming-recall benchmark (seed 003).

`episodes` (synthetic and SQuAD episodes), `rules` (retention and selection rules), `grid`
(the factorial grid, bootstrap and analyses), `report`, `charts`, `cli`.
"""
