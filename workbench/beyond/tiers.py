"""The tiers the generator did not write: hand-written scenario files, the paper's worked example,
and agent logs as scenarios; each inducer's edges and DSGC's retention on them, tier by tier.

An agent log (any wire format `workbench.closure.logs` reads) becomes a DSGC scenario: one block a
message (the system prompt aside), the query the first user message (the task the agent was
given, as the closure replay takes it), and as edges the handle dependencies the closure check
finds: an assistant message that names a handle (`run_5c81d2`) depends on the earlier message
that defined it. A call and its result are joined by call ids the wire format carries outside the
text, so that pairing is structure, not something to read from text, and is not an edge here.
The chain is the last message that needs a handle and what it needs, transitively.

The closure's handle patterns (`workbench.closure.window.spans.CLOSURE_PATTERNS`) decide the edges, so
the mention inducer is scored here against the gate's own handle model: every handle the gate
finds is also a mention (`code:run5c81d2`), the mention model reads more (names, codes in other
styles) because an inducer must find structure in prose, while the gate must be exact and
order-aware to refuse an eviction.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from workbench.beyond import studies
from workbench.closure.logs import heldout_logs, load
from workbench.closure.logs.logtypes import Log
from workbench.common.seeds import Draw
from workbench.dsgc.generator import worked_example
from workbench.dsgc.scenario import Block, Scenario, load_scenarios


def log_scenario(log: Log, name: str) -> Scenario | None:
    """The log as a scenario, or None when no message needs a handle (nothing to induce)."""
    msgs = [m for m in log.messages if m.role != "system" and m.text.strip()]
    if not msgs:
        return None
    h = log.handles()
    bid = {m.index: f"m{m.index}" for m in msgs}
    needs: dict[int, list[int]] = {}
    for m in msgs:
        if m.role == "assistant":
            ps = sorted({p for _, p in h.needed(m.index) if p in bid and p != m.index})
            if ps:
                needs[m.index] = ps
    if not needs:
        return None
    last = max(needs)
    chain, todo = set(), [last]
    while todo:
        i = todo.pop()
        if i not in chain:
            chain.add(i)
            todo.extend(needs.get(i, ()))
    query = next((m.text for m in msgs if m.role == "user"), msgs[0].text)
    blocks = tuple(
        Block(bid[m.index], m.text, "chain" if m.index in chain else "filler") for m in msgs
    )
    edges = tuple((bid[i], bid[p]) for i in sorted(needs) for p in needs[i])
    return Scenario(
        f"log/{name}",
        query,
        blocks,
        edges,
        tuple(bid[i] for i in sorted(chain)),
        f"log-{log.format}",
        "log",
        None,
        None,
        {"source": name},
    )


def log_tier(logs) -> list[Scenario]:
    """Scenarios of the (name, log) pairs that need a handle somewhere, in name order."""
    found = (log_scenario(log, name) for name, log in sorted(logs, key=lambda x: x[0]))
    return [sc for sc in found if sc is not None]


def closure_logs(folder: str | os.PathLike) -> list[tuple[str, Log]]:
    """(name, log) of the closure study's agent logs under `folder` (data/logs): the hand-written
    held-out corpus's logs that check closed (`logs.heldout_logs`) and the four-format
    conversations (`*.json`; a trimmed copy is not a log of its own)."""
    folder = Path(folder)
    held = [(Path(n).stem, log) for n, log in heldout_logs(folder / "heldout")]
    mine = sorted(p for p in folder.glob("*.json") if ".trimmed_by_" not in p.name)
    return held + [(p.stem, load(p)) for p in mine]


def compose(source: str | os.PathLike, sizes=(20, 50)) -> list[Scenario]:
    """A hand-written tier laid out as scenarios (tier D, `data/handwritten/tier_d/source.json`):
    each scenario's chain (each block depending on the one before), its distractors and the
    fillers it needs, taken in turn from the tier's one pool (the k-th scenario from pool place
    17k), shuffled into a store order drawn from its name and size; one scenario a size."""
    src = json.loads(Path(source).read_text(encoding="utf-8"))
    pool = src["fillers"]
    out = []
    for k, s in enumerate(src["scenarios"]):
        chain = [Block(f"c{i + 1}", t, "chain") for i, t in enumerate(s["chain"])]
        near = [Block(f"h{i + 1}", t, "honeypot") for i, t in enumerate(s["distractors"])]
        for n in sizes:
            m = n - len(chain) - len(near)
            fill = [Block(f"f{i + 1}", pool[(17 * k + i) % len(pool)]) for i in range(m)]
            blocks = tuple(Draw("tier", s["name"], n).shuffle([*chain, *near, *fill]))
            edges = tuple((chain[i + 1].id, chain[i].id) for i in range(len(chain) - 1))
            out.append(
                Scenario(
                    f"{s['template']}/{s['name']}/blocks={n}",
                    s["query"],
                    blocks,
                    edges,
                    tuple(b.id for b in chain),
                    s["template"],
                    s["regime"],
                    None,
                    s.get("answer"),
                )
            )
    return out


# the hand-written tiers laid out at 20 and 50 blocks (`compose`), and what each first run led to
LAID_OUT = (
    ("D", "tier_d", "tuned on: variants 15-18"),
    ("E", "tier_e", "tuned on: variant 19"),
    ("F", "tier_f", "tuned on: variant 20"),
    ("G", "tier_g", "variant 21 after its first run"),
    ("H", "tier_h", "nothing changed after its one run"),
)


def hand_tiers(handwritten: str | os.PathLike, logs: str | os.PathLike) -> tuple[dict, dict]:
    """(tier name -> scenarios, tier name -> where its text comes from) for every tier the
    generator did not write: the hand-written files under `handwritten`, the worked example and
    the closure study's logs under `logs`."""
    hw = Path(handwritten)
    tiers = {
        "hand-written (tuned on)": (
            load_scenarios(hw / "scenarios.jsonl"),
            "data/handwritten/README.md: written by hand, then tuned on",
        ),
        "blind B (tuned on after its first run)": (
            load_scenarios(hw / "blind" / "scenarios.jsonl"),
            "data/handwritten/blind/README.md: written by hand before any run, then tuned on",
        ),
        "blind C (two fixes after its first run)": (
            load_scenarios(hw / "blind2" / "scenarios.jsonl"),
            "data/handwritten/blind2/README.md: written by hand after that, two fixes after its run",
        ),
        **{
            f"blind {name} at {n} blocks ({how})": (
                [
                    sc
                    for sc in load_scenarios(hw / folder / "scenarios.jsonl")
                    if len(sc.blocks) == n
                ],
                f"data/handwritten/{folder}/README.md: written by hand before any inducer ran on "
                f"it, measured once, then {how}",
            )
            for name, folder, how in LAID_OUT
            for n in (20, 50)
        },
        "worked example": (
            [worked_example()],
            "the paper's section 2.2 chain (workbench.dsgc.generator.worked_example)",
        ),
        "agent logs": (
            log_tier(closure_logs(logs)),
            "data/logs/heldout/README.md and data/logs/*.json: the closure study's agent logs",
        ),
    }
    return {k: v[0] for k, v in tiers.items()}, {k: v[1] for k, v in tiers.items()}


def tier_tables(tiers: dict, sources: dict, encoder: str, delta: float, **boot) -> pd.DataFrame:
    """`studies.tier_table` of each tier (name -> scenarios), one hop at `delta`, one frame with
    the tier's name and where its text comes from (`sources`)."""
    frames = []
    for name, scenarios in tiers.items():
        graphs = studies.induced_graphs(scenarios, encoder)
        runs = studies.induced_runs(scenarios, encoder, graphs, [1], delta)
        t = studies.tier_table(scenarios, runs, graphs, **boot)
        frames.append(t.assign(tier=name, source=sources[name]))
    cols = ["tier", "regime", "graph", "n", "retention", "retention_lo", "retention_hi"]
    out = pd.concat(frames, ignore_index=True)
    return out[[*cols, *(c for c in out.columns if c not in cols)]]
