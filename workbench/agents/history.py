"""What a guard keeps of one conversation between its calls: every message it has seen (`Seen`),
one store per conversation (`Conversations`). A context editor that rewrites the framework's own
history (a pydantic-ai history processor, LangChain's summarizer, a persisted trim) leaves what it
cut nowhere but here."""

from __future__ import annotations

from collections.abc import Callable, Hashable


class Seen:
    """Every message of one conversation that a guard has seen, in the conversation's order. A
    message is known by identity, else by `key` (its id, or what a framework stamps on it), then,
    with `equal`, by equality; with `equal=False` the key alone decides (an id: a message an
    editor rewrote under the same id is the message seen first, its original). One not seen
    before goes after the last known message before it; before the first known one if none is
    before it; at the end if the history holds no known message."""

    def __init__(self, key: Callable[[object], Hashable], equal: bool = True):
        self.key, self.equal = key, equal
        self.items: list = []
        self._at: dict[int, int] = {}  # id(message) -> position in items (`items` holds each)
        self._by_key: dict[Hashable, int | list[int]] = {}

    def find(self, m, key=None) -> int | None:
        """Where `m` is in `items` (None: not seen); `key`: its key, where known."""
        k = self._at.get(id(m))
        if k is not None:
            return k
        at = self._by_key.get(self.key(m) if key is None else key)
        for k in () if at is None else at if isinstance(at, list) else (at,):
            if not self.equal or self.items[k] == m:
                return k
        return None

    def merge(self, messages) -> list:
        """Take in a history (or one response) and return everything seen."""
        messages = list(messages)
        keys = [None if id(m) in self._at else self.key(m) for m in messages]
        where = [self.find(m, k) for m, k in zip(messages, keys, strict=True)]
        first = next((k for k in where if k is not None), None)
        at = len(self.items) if first is None else first  # where the leading new ones go
        new = []  # (position to insert before, message, key), positions before merging
        for m, k, key in zip(messages, where, keys, strict=True):
            if k is None:
                new.append((at, m, key))
            else:
                at = k + 1
        if new and new[0][0] == len(self.items):  # all after what was seen: appended
            for _, m, key in new:
                self._add(m, len(self.items), key)
                self.items.append(m)
        elif new:
            merged, j = [], 0
            for pos, x in enumerate([*self.items, None]):
                while j < len(new) and new[j][0] == pos:
                    merged.append(new[j][1])
                    j += 1
                if pos < len(self.items):
                    merged.append(x)
            self.items = merged
            self._at, self._by_key = {}, {}
            for j, x in enumerate(self.items):
                self._add(x, j)
        return self.items

    def _add(self, m, j: int, key=None) -> None:
        self._at[id(m)] = j
        k = self.key(m) if key is None else key
        at = self._by_key.get(k)  # (a position, or the positions of messages of one key)
        if at is None:
            self._by_key[k] = j
        elif isinstance(at, list):
            at.append(j)
        else:
            self._by_key[k] = [at, j]


class Conversations:
    """A store per conversation (a guard's `Seen`), by a pydantic-ai `conversation_id` or a
    LangGraph `thread_id`: the `size` most recently used kept, the oldest forgotten first."""

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
