"""Closure inside an OpenAI Agents SDK run: `closure_input_filter` trims the Responses items sent
to the model, and `ClosureGuard` checks what another filter left.

    run_config = RunConfig(call_model_input_filter=closure_input_filter(max_tokens=6000))
    run_config = RunConfig(call_model_input_filter=ClosureGuard(ToolOutputTrimmer()))

The SDK takes one `call_model_input_filter`, so the guard wraps the filter it checks: it runs that
filter, then checks (and repairs) the filter's output against the input it was given. A
`reasoning` item stays with the call or message it precedes (one block in the trim). Each filter's
`records` says, per model call, what it kept, dropped, restored and tombstoned.
"""

from __future__ import annotations

import inspect
import json
import time

from agents.run_config import ModelInputData

from workbench.agents.core import (
    ClosureError,
    Codec,
    Records,
    guard,
    note,
    settings,
    stub_text,
    trim,
    trim_record,
)


def _plain(item) -> dict:
    """An input item as the dict it is on the wire (the SDK may hand pydantic models)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is None:
        raise TypeError(f"not a Responses input item: {type(item).__name__}")
    return dump(exclude_unset=True)


def _key(it: dict):
    """An edited item's original: a call or an output by its call id and type (a trimmed output
    keeps them), an item with an id by it, anything else by its content."""
    if "call_id" in it:
        return ("call", it.get("type"), it["call_id"])
    if it.get("id"):
        return ("id", it["id"])
    return ("json", json.dumps(it, sort_keys=True, default=str))


CODEC = Codec(
    "responses",
    _key,
    lambda cid, name: {
        "type": "function_call_output",
        "call_id": cid,
        "output": stub_text(cid, name),
    },
)


class closure_input_filter:  # noqa: N801 - used as a function: RunConfig(call_model_input_filter=...)
    """A `call_model_input_filter` that trims the Responses items (and counts the instructions) to
    `max_tokens` without orphaning a call, an output, a reasoning item or a handle."""

    def __init__(self, max_tokens: int, strategy: str = "last"):
        settings(max_tokens, strategy)
        self.max_tokens, self.strategy = max_tokens, strategy
        self.records = Records()

    def __call__(self, data) -> ModelInputData:
        t0 = time.perf_counter()
        md = data.model_data
        body = {"input": [_plain(x) for x in md.input]}
        if md.instructions is not None:
            body["instructions"] = md.instructions
        t = trim(body, "responses", self.max_tokens, self.strategy)
        out = t.output
        self.records.add(trim_record(t, len(self.records) + 1, time.perf_counter() - t0))
        return ModelInputData(input=list(out["input"]), instructions=out.get("instructions"))


class ClosureGuard:
    """Wrap another `call_model_input_filter` (or none) and check what it sends: an orphan it left
    is repaired from the input it was given, or, with `mode="raise"`, raises `ClosureError`
    naming every orphan."""

    def __init__(self, inner=None, mode: str = "repair", max_tokens: int | None = None):
        settings(max_tokens, mode=mode)
        self.inner, self.mode, self.max_tokens = inner, mode, max_tokens
        self.records = Records()

    def __call__(self, data):
        full = [_plain(x) for x in data.model_data.input]
        if self.inner is None:
            return self._check(full, data.model_data)
        out = self.inner(data)
        if inspect.isawaitable(out):
            return self._later(out, full)
        return self._check(full, out)

    async def _later(self, out, full):
        return self._check(full, await out)

    def _check(self, full: list, md) -> ModelInputData:
        edited = [_plain(x) for x in md.input]
        g = guard(edited, full, CODEC, mode=self.mode, max_tokens=self.max_tokens,
                  call=len(self.records) + 1)  # fmt: skip
        self.records.add(g.record)
        instructions = md.instructions
        if g.tombstones:
            text = note(g.tombstones)
            instructions = text if not instructions else f"{instructions}\n{text}"
        return ModelInputData(input=g.items, instructions=instructions)


__all__ = ["ClosureError", "ClosureGuard", "closure_input_filter"]
