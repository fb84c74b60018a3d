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
import sys
import time

from agents.run_config import ModelInputData

from workbench.agents.core import (
    ClosureError,
    Records,
    guard,
    note,
    settings,
    stub_text,
    trim,
    trim_record,
)
from workbench.agents.history import Codec, Reading
from workbench.common.io import paused_gc


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
    if it.keys() <= _MESSAGE and it.get("type", "message") == "message":
        c = it.get("content")  # a message as a person or a model wrote it: its text decides
        if isinstance(c, str):
            return ("text", it.get("role"), c)
        if isinstance(c, list) and all(type(x) is dict and x.keys() == _PART for x in c):
            return ("parts", it.get("role"), tuple((x["type"], x["text"]) for x in c))
    return ("json", json.dumps(it, sort_keys=True, default=str))


_MESSAGE, _PART = {"type", "role", "content"}, {"type", "text"}


CODEC = Codec(
    "responses",
    _key,
    lambda cid, name: {
        "type": "function_call_output",
        "call_id": cid,
        "output": stub_text(cid, name),
    },
    by_value=True,  # a session's items come back as new dicts each run: the same values
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
    naming every orphan.

    With `session=` (the run's `Session`), the history to repair from is the session's whole store
    with this run's new items after it, not only the input the SDK built: a session `limit` cuts
    the history before any filter runs, so what it cut is found only there. The store is read
    whole on the first call; after it, a `SQLiteSession`'s is read only for what it added
    (`Store`), any other session's whole on every call. The history as read last is kept
    (`Reading`): the next call reads only the items after it. Keep one guard for a session across
    its runs: a new guard reads the store whole again."""

    def __init__(self, inner=None, mode: str = "repair", max_tokens: int | None = None,
                 session=None):  # fmt: skip
        settings(max_tokens, mode=mode)
        if session is not None and not callable(getattr(session, "get_items", None)):
            raise TypeError(f"session must be an Agents SDK Session, got {type(session).__name__}")
        self.inner, self.mode, self.max_tokens, self.session = inner, mode, max_tokens, session
        self.store = Store(session) if session is not None else None
        self.records = Records()
        self._reading = Reading()  # the history as read last (a guard serves one conversation)

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
        stored = await self.store.items()  # a list of its own: another run may read the store
        out = data.model_data if self.inner is None else self.inner(data)
        if inspect.isawaitable(out):
            out = await out
        with paused_gc():  # a whole history read (keyed where it does not line up): the collector
            # would add a third
            return self._check(with_store(stored, given), out)

    def _check(self, full: list, md) -> ModelInputData:
        edited = [_plain(x) for x in md.input]
        g = guard(edited, full, CODEC, mode=self.mode, max_tokens=self.max_tokens,
                  call=len(self.records) + 1, reading=self._reading)  # fmt: skip
        self.records.add(g.record)
        instructions = md.instructions
        if g.tombstones:
            text = note(g.tombstones)
            instructions = text if not instructions else f"{instructions}\n{text}"
        return ModelInputData(input=g.items, instructions=instructions)


class Store:
    """A session's items as a guard read them last. A session whose store is only appended to or
    cut from its end (`SQLiteSession`, by exact type: `add_items`, `pop_item`, `clear_session`)
    is read, after the first call, only for its newest items (`probe` of them, then four times
    as many until they line up): when they start with the last items read, in a run holding an
    item with an id of its own, the store is what was read then followed by the rest. Anything
    else (a pop or a clear followed by other items, more added than read, a seam of messages
    without ids, any other session, which may rewrite its store as a compaction does) reads the
    store whole. This rests on what the SDK writes: each call, output and model message carries
    an id of its own and is written once. A store given an item twice (a call id already in it),
    or a popped item back in another place, can line up where it should not."""

    PROBE = 16
    APPENDS_ONLY = ("agents.memory.sqlite_session.SQLiteSession",)

    def __init__(self, session, probe: int = PROBE):
        if probe < 1:
            raise ValueError(f"probe must be at least 1, got {probe}")
        self.session, self.probe = session, probe
        name = f"{type(session).__module__}.{type(session).__qualname__}"
        self.probes = name in self.APPENDS_ONLY
        self._items: list | None = None
        self.whole_reads = 0  # how many calls read the store whole (for the tests and the bench)

    async def items(self) -> list:
        """The store's items now, as plain dicts (a new list; the items are shared)."""
        kept = self._items
        if self.probes and kept:
            p = self.probe
            while p < 2 * len(kept):
                tail = [_plain(x) for x in await self.session.get_items(limit=p)]
                if len(tail) < p:  # the store is shorter than the probe: it is all of it
                    self.whole_reads += 1
                    self._items = tail
                    return list(tail)
                m = _seam(kept[-p:], tail)
                if m:
                    self._items = kept + tail[m:]
                    return list(self._items)
                p *= 4
        self.whole_reads += 1
        self._items = [_plain(x) for x in await self.session.get_items(limit=sys.maxsize)]
        return list(self._items)


def _seam(kept: list, tail: list) -> int:
    """How many of `tail`'s first items are `kept`'s last ones (the longest such run, by value),
    where an item of its own id in the run ties it to its place (0 otherwise: new messages
    without ids can equal old ones)."""
    m = _overlap(*([json.dumps(x, sort_keys=True, default=str) for x in xs] for xs in (kept, tail)))
    return m if any("call_id" in x or x.get("id") for x in tail[:m]) else 0


def with_store(stored: list, given: list) -> list:
    """The run's whole history: the session's stored items the input does not carry (what a
    `limit` cut), then the input's items (the store's newest and this run's new ones), the input's
    own objects, so a filter's kept items are found in it by identity. The input must start with
    the store's newest items, in order, each the same item (`_key`; the longest such run is
    taken: a repeated message matches its latest copy); an input that does not is returned alone
    (nothing is restored from a store that does not line up). An input equal to the store's
    newest items (the SDK stores a run's items before the next model call) lines up whole."""
    tail = stored[-len(given) :] if given else []
    if tail == given:  # items equal by value are the same items: the run is the whole input
        m = len(given)
    else:
        m = _overlap(list(map(_key, tail)), list(map(_key, given)))
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
