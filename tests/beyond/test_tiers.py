"""The tiers the generator did not write (workbench.beyond.tiers): hand-written scenario files,
the worked example, and the closure study's agent logs read as scenarios."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.beyond import tiers
from workbench.beyond.mentions import mentions
from workbench.closure.logs import read

ROOT = Path(__file__).resolve().parents[2]


def _log(*later):
    return read(
        [
            {"role": "system", "content": "You run the platform."},
            {"role": "user", "content": "Retrain the demand model, please."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "submit", "arguments": "{\"dataset\": \"demand\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"run\": \"run_5c81d2\"}"},
            *later,
        ],
        "openai",
    )  # fmt: skip


def test_a_log_becomes_a_scenario_with_the_closures_handle_edges():
    poll = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c2", "type": "function",
         "function": {"name": "status", "arguments": "{\"run\": \"run_5c81d2\"}"}}]}  # fmt: skip
    sc = tiers.log_scenario(
        _log(poll, {"role": "tool", "tool_call_id": "c2", "content": "done"}), "t"
    )
    assert sc.query == "Retrain the demand model, please."
    assert [b.id for b in sc.blocks] == ["m1", "m2", "m3", "m4", "m5"]  # no system block
    assert sc.edges == (("m4", "m3"),)  # the poll needs the result that defined the run id
    assert sc.chain == ("m3", "m4") and sc.regime == "log"
    assert tiers.log_scenario(_log(), "t") is None  # nothing needs a handle: nothing to induce


def test_every_tier_loads_and_the_blind_ones_are_twenty_or_fifty_blocks():
    hand, sources = tiers.hand_tiers(ROOT / "data" / "handwritten", ROOT / "data" / "logs")
    assert list(hand) == list(sources) and all(hand.values())
    blind = [sc for name, scs in hand.items() if name.startswith("blind") for sc in scs]
    assert len(blind) == 28 + 2 * (24 + 24 + 24 + 20 + 20 + 33)  # B, C; D to I at 20 and 50 blocks
    for name, scs in hand.items():  # a tier holds one size, the one its name says
        if name.startswith("blind"):
            size = 50 if " at 50 blocks" in name else 20
            assert {len(sc.blocks) for sc in scs} == {size}, name
    for sc in blind:  # each chain is linked k1 <- k2 (<- k3), the chain's own blocks
        assert set(sc.chain) == {b.id for b in sc.blocks if b.kind == "chain"}
        assert len(sc.edges) == len(sc.chain) - 1
    for src in sources.values():  # every tier says where its text comes from, in a README
        for part in src.split(" and "):
            path = part.split(":")[0]
            if path.endswith("README.md"):
                assert (ROOT / path).is_file(), path


def test_every_handle_the_gate_finds_is_a_mention():
    """One handle model: where a call takes from an earlier message an id the closure note's
    pattern matches (a job id), the two blocks share a code mention (the mention model reads the
    note's handles). The gate's value flow reads further than the mention model (an e-mail
    address, a path, a name passed whole): those edges are the gate's alone."""
    from workbench.common.handles import HANDLE_RE

    rx = re.compile(HANDLE_RE)
    found = 0
    for _name, log in tiers.closure_logs(ROOT / "data" / "logs"):
        f = log.flow()
        for i, uses in enumerate(f.uses):
            for x, d in uses:
                if d is None or d < 0 or not rx.fullmatch(x):
                    continue
                found += 1
                shared = mentions(log.messages[i].text) & mentions(log.messages[d].text)
                assert any(m.startswith("code:") for m in shared), (_name, i, d, x)
    assert found >= 10
