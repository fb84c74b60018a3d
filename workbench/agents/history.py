"""What an adapter keeps of one conversation between its calls: how it sees the framework's items
(`Codec`), every message it has seen (`Seen`, one store per conversation in `Conversations`), and
the history as it read it last (`Reading`), so the next call reads only what the conversation
added since."""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from workbench.closure.logs import Log, LogError, approx_tokens, read, read_more


@dataclass(frozen=True)
class Codec:
    """How an adapter sees one framework's request items: the wire format they read as, a key
    that finds an edited item's original in the full history (the same key for an item a
    context editor rewrote in place, such as a cleared tool result), a stand-in result for a
    call whose result is gone, and what an item's reading rests on (`stamp`)."""

    fmt: str
    key: Callable[[object], Hashable]
    stub: Callable[[str, str], object]  # (call id, tool name) -> a result item
    wrap: Callable[[list], object] = list  # items -> what `read` takes (a body, say)
    # what an item's reading rests on, by identity: an item whose stamp is another object than
    # when it was read is read again (`Reading`); the item itself when nothing better is known
    stamp: Callable[[object], object] = lambda it: it
    # items that are plain data (the Responses API's dicts): one equal to an item read before
    # reads as it did, so a history read back from a store (new objects, the same values) is
    # recognised by value, and no stamp is needed
    by_value: bool = False


class Reading:
    """A conversation's history as a guard read it last, kept between its calls: the next call's
    history, which starts with it (the same objects, each one's stamp the same object; or, for a
    codec `by_value`, items equal to those read), is read only for the messages after it, the
    provider's order rules checked again over the whole; any other history is read whole. The
    messages read stay as they were read: a message changed in place keeping its stamp (its content
    object, for LangChain) is not read again, which is why the frameworks' own editors replace a
    message rather than edit it. A reading handed out is never changed: a grown history is a new log
    (sharing the earlier messages), and calls on one conversation at once take their histories in
    one at a time."""

    def __init__(self):
        self._lock = threading.Lock()  # one call at a time takes in a history
        self._items: list = []
        self._stamps: list = []
        self._log: Log | None = None
        self._prices: list[int] = []

    def prices(self, log: Log) -> list[int]:
        """Each message's tokens (`approx_tokens`) of `log`, a reading this gave: kept between
        calls for the history read last (a list that only grows), counted afresh otherwise."""
        with self._lock:
            if log is not self._log:
                return list(map(approx_tokens, log.messages))
            p = self._prices
            if len(p) < len(log.messages):
                p.extend(map(approx_tokens, log.messages[len(p) :]))
            return p

    def __call__(self, full: list, codec: Codec) -> Log | None:
        """The reading of `full` (None: no valid request, nothing to restore from)."""
        with self._lock:
            return self._take(full, codec)

    def _take(self, full: list, codec: Codec) -> Log | None:
        log, n = self._log, len(self._items)
        stamps = [] if codec.by_value else list(map(codec.stamp, full))
        if (
            log is not None
            and codec.wrap is list
            and log.format == codec.fmt
            and n <= len(full)
            and (
                self._items == full[:n]  # equal lists: each item the same object or equal
                if codec.by_value
                else all(map(operator.is_, self._items, full))
                and all(map(operator.is_, self._stamps, stamps))
            )
        ):
            if n < len(full):
                try:
                    log = read_more(log, full[n:])
                except LogError:
                    log = None  # read whole: no valid request, nothing to restore from
            if log is not None:
                self._items, self._stamps, self._log = list(full), stamps, log
                return log
        try:
            log = read(codec.wrap(full), codec.fmt)
        except LogError:
            log = None
        self._items, self._stamps, self._log, self._prices = list(full), stamps, log, []
        return log


class Seen:
    """Every message of one conversation that a guard has seen, in the conversation's order. A
    context editor that rewrites the framework's own history (a pydantic-ai history processor,
    LangChain's summarizer, a persisted trim) leaves what it cut nowhere but here. A message is
    known by identity, else by `key` (its id, or what a framework stamps on it), then, with
    `equal`, by equality; with `equal=False` the key alone decides (an id: a message an editor
    rewrote under the same id is the message seen first, its original). One not seen before goes
    after the last known message before it."""

    def __init__(self, key: Callable[[object], Hashable], equal: bool = True):
        self.key, self.equal = key, equal
        self.items: list = []
        self._at: dict[int, int] = {}  # id(message) -> position in items (`items` holds each)
        self._by_key: dict[Hashable, list[int]] = {}
        # the copies the last merge found by key (a checkpoint read back gives each call of a run
        # the same new objects): id -> (position, the copy, held so its id is not reused)
        self._alias: dict[int, tuple[int, object]] = {}

    def _find(self, m, key=None) -> int | None:
        """Where `m` is in `items` (None: not seen); `key`, where given, is `self.key(m)`."""
        k = self._at.get(id(m))
        if k is not None:
            return k
        hit = self._alias.get(id(m))
        if hit is not None and hit[1] is m:
            return hit[0]
        for k in self._by_key.get(self.key(m) if key is None else key, ()):
            if not self.equal or self.items[k] == m:
                return k
        return None

    def merge(self, messages) -> list:
        """Take in a history (or one response) and return everything seen. A message not seen
        before goes after the last known one before it in `messages`; before the first known one
        if none is before it; at the end if `messages` holds no known message (what follows the
        conversation so far, such as the newest messages alone)."""
        messages = list(messages)
        keys: dict[int, Hashable] = {}  # position in `messages` -> its key, computed once

        def find(j: int) -> int | None:
            m = messages[j]
            if id(m) in self._at:
                return self._at[id(m)]
            if j not in keys:
                keys[j] = self.key(m)
            return self._find(m, keys[j])

        first, start = None, 0
        if self.items:
            first = next((k for k in map(find, range(len(messages))) if k is not None), None)
        else:  # an empty store knows none of them: they are appended up to the first repeat
            start = self._append_new(messages, keys)
        at = len(self.items) if first is None else first  # where the leading new ones go
        alias, moved = {}, False
        for j in range(start, len(messages)):
            m = messages[j]
            k = find(j)  # after an insertion, the positions it moved are indexed again
            if k is not None:
                if id(m) not in self._at:
                    alias[id(m)] = (k, m)
                at = k + 1
                continue
            self.items.insert(at, m)
            if at == len(self.items) - 1:
                self._index(m, at, keys[j])  # (found by neither id nor alias: keyed above)
            else:  # before the end: the positions after it moved
                self._reindex()
                moved = True
            at += 1
        if moved:  # positions noted before a move are stale: found again
            self._alias = {}
            alias = {id(m): (k, m) for m in messages if id(m) not in self._at
                     for k in [self._find(m)] if k is not None}  # fmt: skip
        self._alias = alias
        return self.items

    def _append_new(self, messages: list, keys: dict) -> int:
        """Into an empty store, append `messages` up to the first that repeats one before it (the
        same object, or by key, and with `equal` by equality), as the merge's loop would place
        them, their keys noted in `keys`; return how many were appended."""
        items, at, by_key, key, equal = self.items, self._at, self._by_key, self.key, self.equal
        for j, m in enumerate(messages):
            if id(m) in at:
                return j
            k = keys[j] = key(m)
            ks = by_key.get(k)
            if ks is not None and (not equal or any(items[x] == m for x in ks)):
                return j
            at[id(m)] = len(items)
            if ks is None:
                by_key[k] = [len(items)]
            else:
                ks.append(len(items))
            items.append(m)
        return len(messages)

    def _reindex(self) -> None:
        self._at, self._by_key, self._alias = {}, {}, {}
        for j, x in enumerate(self.items):
            self._index(x, j)

    def _index(self, m, k: int, key=None) -> None:
        self._at[id(m)] = k
        self._by_key.setdefault(self.key(m) if key is None else key, []).append(k)


class Conversations:
    """A store per conversation (a guard's `Seen`, a trim's `Reading`), by a pydantic-ai
    `conversation_id` or a LangGraph `thread_id`: the `size` most recently used kept, the oldest
    forgotten first."""

    def __init__(self, size: int, make: Callable[[], object]):
        if size < 1:
            raise ValueError(f"conversations must be at least 1, got {size}")
        self.size, self.make = size, make
        self._by: dict = {}

    def get(self, cid):
        """The store of conversation `cid` (a new one the first time; None for no id)."""
        if cid is None:
            return None
        seen = self._by.pop(cid, None)
        if seen is None:
            seen = self.make()
        self._by[cid] = seen  # the most recently used last
        while len(self._by) > self.size:
            self._by.pop(next(iter(self._by)))
        return seen

    def __len__(self) -> int:
        return len(self._by)

    def __contains__(self, cid) -> bool:
        return cid in self._by

    def values(self) -> list:
        return list(self._by.values())
