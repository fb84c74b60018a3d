"""The room's predictions, for the instructor: per workshop part, each participant's current
prediction (a reveal locks it), counted by choice, and whether the instructor shows the part's
bars on the projector.

A participant is an id the room issued (`issue`) and the page keeps in its browser, so a reload,
a reconnect or a second tab of the same browser is still one participant, whose prediction is
counted once. An id the room never issued is refused, so a page cannot add predictions under
made-up names, and the room issues at most `most` ids (each page of the room's seats, with room
for reloads in other browsers): past that a page is served but not counted. The pages' messages
arrive in the room's worker thread and the instructor's page reads from the server's loop, so
every access holds the tally's lock.
"""

from __future__ import annotations

import secrets
import threading


class Tally:
    """Predictions by part and participant; `parts` maps each part to its number of choices."""

    def __init__(self, parts: dict[str, int], most: int):
        self.parts = dict(parts)
        self.most = most
        self.people: set[str] = set()
        self.choices: dict[str, dict[str, int]] = {p: {} for p in self.parts}
        self.locked: dict[str, set[str]] = {p: set() for p in self.parts}
        self.shown: set[str] = set()
        self.lock = threading.Lock()

    def issue(self) -> str | None:
        """A new participant's id, or None once `most` have been issued."""
        with self.lock:
            if len(self.people) >= self.most:
                return None
            pid = secrets.token_urlsafe(12)
            self.people.add(pid)
            return pid

    def knows(self, pid: str) -> bool:
        with self.lock:
            return pid in self.people

    def predict(self, pid: str | None, part: str, choice: int | None, lock: bool = False) -> bool:
        """Record `pid`'s prediction for `part` (None: no prediction); `lock` (a reveal) fixes it.
        A locked prediction does not change; an unknown participant or part records nothing.
        Returns whether anything was recorded."""
        with self.lock:
            if pid not in self.people or part not in self.parts:
                return False
            if pid in self.locked[part]:
                return False
            if choice is None:
                self.choices[part].pop(pid, None)
            elif 0 <= choice < self.parts[part]:
                self.choices[part][pid] = choice
            else:
                return False
            if lock:
                self.locked[part].add(pid)
            return True

    def show(self, part: str, shown: bool) -> None:
        """The instructor shows (or hides again) a part's bars."""
        if part not in self.parts:
            raise ValueError(f"no part {part!r}")
        with self.lock:
            (self.shown.add if shown else self.shown.discard)(part)

    def counts(self) -> dict[str, dict]:
        """Per part: how many predicted each choice, how many predicted, how many revealed, and
        whether its bars are shown."""
        with self.lock:
            out = {}
            for part, n in self.parts.items():
                counts = [0] * n
                for c in self.choices[part].values():
                    counts[c] += 1
                out[part] = {
                    "counts": counts,
                    "predicted": len(self.choices[part]),
                    "revealed": len(self.locked[part]),
                    "shown": part in self.shown,
                }
            return {"participants": len(self.people), "parts": out}

    def __repr__(self) -> str:
        return f"Tally({len(self.people)} participants, {len(self.parts)} parts)"
