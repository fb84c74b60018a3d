"""Closure inside an OpenAI Agents SDK run: `closure_input_filter` trims the Responses items sent
to the model, and `ClosureGuard` checks what another filter left. Both run under `Runner.run` and
`Runner.run_sync`.

    run_config = RunConfig(call_model_input_filter=closure_input_filter(max_tokens=6000))
    run_config = RunConfig(call_model_input_filter=ClosureGuard(ToolOutputTrimmer()))

The SDK takes one `call_model_input_filter`, so the guard wraps the filter it checks: it runs that
filter, then checks (and repairs) the filter's output against the input it was given. A
`reasoning` item stays with the call or message it precedes (one block in the trim). Each filter's
`records` says, per model call, what it kept, dropped, restored and tombstoned.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import time

from agents.run_config import ModelInputData

from workbench.agents.core import (
    ClosureError,
    Records,
    guard,
    note,
    settings,
    trim,
    trim_record,
    wire,
)


def _plain(item) -> dict:
    """An input item as the dict it is on the wire (the SDK may hand pydantic models)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is None:
        raise TypeError(f"not a Responses input item: {type(item).__name__}")
    return dump(exclude_unset=True)


CODEC = wire("responses")


class closure_input_filter:  # noqa: N801 - used as a function: RunConfig(call_model_input_filter=...)
    """A `call_model_input_filter` that trims the Responses items (and counts the instructions) to
    `max_tokens` without orphaning a call, an output, a reasoning item or an id. `handle_re`:
    what else counts as an id (`workbench.closure.logs.flow`)."""

    def __init__(self, max_tokens: int, strategy: str = "last", handle_re=None):
        settings(max_tokens, strategy)
        self.max_tokens, self.strategy, self.handle_re = max_tokens, strategy, handle_re
        self.records = Records()

    def __call__(self, data) -> ModelInputData:
        t0 = time.perf_counter()
        md = data.model_data
        body = {"input": [_plain(x) for x in md.input]}
        if md.instructions is not None:
            body["instructions"] = md.instructions
        t = trim(body, "responses", self.max_tokens, self.strategy, self.handle_re)
        out = t.output
        self.records.add(trim_record(t, len(self.records) + 1, time.perf_counter() - t0))
        return ModelInputData(input=list(out["input"]), instructions=out.get("instructions"))


class ClosureGuard:
    """Wrap another `call_model_input_filter` (or none) and check what it sends: an orphan it left
    is repaired from the input it was given, or, with `mode="raise"`, raises `ClosureError`
    naming every orphan. Given `max_tokens`, a request still over it is cut by the closure trim.

    With `session=` (the run's `Session`), the history to repair from is the session's whole store
    with this run's new items after it, not only the input the SDK built: a session `limit` cuts
    the history before any filter runs, so what it cut is found only there. The store is read
    whole on every call (`get_items()`)."""

    def __init__(self, inner=None, mode: str = "repair", max_tokens: int | None = None,
                 session=None, handle_re=None):  # fmt: skip
        settings(max_tokens, mode=mode)
        if session is not None and not callable(getattr(session, "get_items", None)):
            raise TypeError(f"session must be an Agents SDK Session, got {type(session).__name__}")
        self.inner, self.mode, self.max_tokens, self.session = inner, mode, max_tokens, session
        self.handle_re = handle_re
        self.records = Records()

    def __call__(self, data):
        given = [_plain(x) for x in data.model_data.input]
        if self.session is not None:
            return self._with_session(data, given)
        out = data.model_data if self.inner is None else self.inner(data)
        if inspect.isawaitable(out):
            return self._later(out, given)
        return self._check(given, out)

    async def _later(self, out, full):
        return self._check(full, await out)

    async def _with_session(self, data, given: list):
        stored = [_plain(x) for x in await self.session.get_items(limit=sys.maxsize)]
        out = data.model_data if self.inner is None else self.inner(data)
        if inspect.isawaitable(out):
            out = await out
        return self._check(with_store(stored, given), out)

    def _check(self, full: list, md) -> ModelInputData:
        edited = [_plain(x) for x in md.input]
        instructions = md.instructions  # (priced with the request, as the trim prices them)
        codec = CODEC if instructions is None else dataclasses.replace(
            CODEC, wrap=lambda items: {"input": items, "instructions": instructions})  # fmt: skip
        g = guard(edited, full, codec, mode=self.mode, max_tokens=self.max_tokens,
                  call=len(self.records) + 1, pattern=self.handle_re)  # fmt: skip
        self.records.add(g.record)
        if not g.tombstones:
            return ModelInputData(input=g.items, instructions=instructions)
        tombs = note(g.tombstones)
        return ModelInputData(
            input=g.items, instructions=f"{instructions}\n{tombs}" if instructions else tombs
        )


def with_store(stored: list, given: list) -> list:
    """The run's whole history: the session's stored items the input does not carry (what a
    `limit` cut), then the input's items (the store's newest and this run's new ones), the input's
    own objects, so a filter's kept items are found in it by identity. The input must start with
    the store's newest items, in order, each the same item (`CODEC.key`; the longest such run is
    taken: a repeated message matches its latest copy); an input that does not is returned alone
    (nothing is restored from a store that does not line up). An input equal to the store's
    newest items (the SDK stores a run's items before the next model call) lines up whole."""
    tail = stored[-len(given) :] if given else []
    if tail == given:
        m = len(given)
    else:
        m = _overlap(list(map(CODEC.key, tail)), list(map(CODEC.key, given)))
    return stored[: len(stored) - m] + given if m else given


def _overlap(tail: list, head: list) -> int:
    """The length of the longest prefix of `head` that is a suffix of `tail`, in linear time (the
    prefix function of head + a separator + tail)."""
    ids: dict = {}
    seq = [ids.setdefault(k, len(ids)) for k in head] + [-1]
    seq += [ids.get(k, -2) for k in tail]
    pi = [0] * len(seq)
    for i in range(1, len(seq)):
        k = pi[i - 1]
        while k and seq[i] != seq[k]:
            k = pi[k - 1]
        pi[i] = k + (seq[i] == seq[k] and seq[i] >= 0)
    return pi[-1] if tail else 0


__all__ = ["ClosureError", "ClosureGuard", "closure_input_filter"]
