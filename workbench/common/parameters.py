"""A study's parameters declared once, beside the module that runs it: each one's name, kind
(type and allowed values, built on the shared ranges of `workbench.common.options`), default
meaning and words. The notebook's `settle` checks against the declaration, the explorer's sliders
read the same ranges, and the comments of a notebook's parameters cell are the declaration's
words (`Param.comment`; `scripts/parameter_cells.py` writes them, a test holds them).

A kind is an object with `check(label, value, home)` (the value, or ValueError naming `label`;
`home` is the folder relative paths start in) and `words()` (its allowed values in words). Bounds
are read when asked, so a range changed in `options` changes the check and the words at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from workbench.common.options import RANGES, SLIDERS, check_choice, check_number, describe
from workbench.common.seeds import parse_seeds
from workbench.common.sweep import parse_scheduler


def _g(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Number:
    """A number of the knob `knob` (RANGES), optionally narrowed to [lo, hi]."""

    knob: str
    lo: float | None = None
    hi: float | None = None

    def check(self, label, value, home=None):
        value = check_number(self.knob, value, label)
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            lo = self.lo if self.lo is not None else RANGES[self.knob][0]
            hi = self.hi if self.hi is not None else RANGES[self.knob][1]
            raise ValueError(f"{label} must be in [{lo:g}, {hi:g}]; got {value!r}")
        return value

    def words(self) -> str:
        if self.lo is not None and 0 < self.lo < 1e-6 and self.hi is not None:
            return f"in (0, {_g(self.hi)}]"  # (a lower bound that only keeps 0 out)
        if self.lo is not None and self.hi is not None:
            return f"{_g(self.lo)}..{_g(self.hi)}"
        if self.lo is not None:
            return f"at least {_g(self.lo)}"
        return describe(self.knob).replace(">=", "from")  # (papermill reads '=' as an assignment)


@dataclass(frozen=True)
class Slider:
    """A value of an explorer slider (SLIDERS: its knob, then the slider's narrower range)."""

    slider: str

    def check(self, label, value, home=None):
        knob, lo, hi, _ = SLIDERS[self.slider]
        value = check_number(knob, value, label)
        if not lo <= value <= hi:
            raise ValueError(f"{label} must be in [{lo:g}, {hi:g}]; got {value!r}")
        return value

    def words(self) -> str:
        _, lo, hi, _ = SLIDERS[self.slider]
        return f"{_g(lo)}..{_g(hi)} (the slider's range)"


@dataclass(frozen=True)
class Choice:
    """One of `choices` (a sequence, or a function giving it when asked)."""

    choices: Sequence | Callable

    def options(self) -> tuple:
        return tuple(self.choices() if callable(self.choices) else self.choices)

    def check(self, label, value, home=None):
        return check_choice(label, value, self.options())

    def words(self) -> str:
        return " | ".join(map(str, self.options()))


@dataclass(frozen=True)
class Names(Choice):
    """One or more of `choices`, comma-separated (and `must` among them)."""

    must: str | None = None

    def check(self, label, value, home=None):
        allowed = self.options()
        items = [x.strip() for x in value.split(",")] if isinstance(value, str) else None
        if not items or not all(items) or any(x not in allowed for x in items):
            raise ValueError(
                f"{label} must be one or more of {', '.join(allowed)}, comma-separated; "
                f"got {value!r}"
            )
        if self.must and self.must not in items:
            raise ValueError(f"{label} must include {self.must}; got {value!r}")
        return value

    def words(self) -> str:
        must = f", with {self.must}" if self.must else ""
        return f"comma-separated, of: {', '.join(self.options())}{must}"


@dataclass(frozen=True)
class Listed:
    """A non-empty list, each item of the kind `each`."""

    each: object

    def check(self, label, value, home=None):
        if not isinstance(value, list | tuple) or not value:
            raise ValueError(f"{label} must be a non-empty list; got {value!r}")
        for v in value:
            self.each.check(f"each of {label}", v, home)
        return value

    def words(self) -> str:
        return f"a list, each {self.each.words()}"


@dataclass(frozen=True)
class Seeds:
    """A seed range: N (seeds 0..N-1, N at least 1) or 'A:B' (half-open); `zero`: 0 means none."""

    zero: bool = False

    def check(self, label, value, home=None):
        if self.zero and value == 0 and not isinstance(value, bool):
            return value
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(f"{label} must be N or 'A:B'; got {value!r}")
        if isinstance(value, int) and value < 1:
            raise ValueError(
                f"{label} must be N (seeds 0..N-1, N at least 1) or 'A:B'; got {value}"
            )
        return _parsed(label, parse_seeds, value)

    def words(self) -> str:
        return ("0 (none), " if self.zero else "") + 'N (0..N-1) or "A:B", half-open'


@dataclass(frozen=True)
class SeedOrFirst:
    """A seed, or -1: the first seed that shows what the notebook looks for."""

    def check(self, label, value, home=None):
        if value == -1 and not isinstance(value, bool):
            return value
        return check_number("seed", value, label)

    def words(self) -> str:
        return "a seed from 0, or -1"


@dataclass(frozen=True)
class Text:
    """A non-empty string."""

    def check(self, label, value, home=None):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{label} must be a non-empty string; got {value!r}")
        return value

    def words(self) -> str:
        return "a name"


@dataclass(frozen=True)
class Url:
    """'' or an http(s) address."""

    def check(self, label, value, home=None):
        if value == "" or (isinstance(value, str) and re.match(r"https?://\S+$", value)):
            return value
        raise ValueError(f"{label} must be '' or an http(s):// address; got {value!r}")

    def words(self) -> str:
        return '"" or an http(s):// address'


@dataclass(frozen=True)
class Scheduler:
    """None (in-process), 'local:N' or a scheduler's address."""

    def check(self, label, value, home=None):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{label} must be None or a string; got {value!r}")
        return _parsed(label, parse_scheduler, value)

    def words(self) -> str:
        return 'None (in-process), "local:N" or "tcp://HOST:PORT"'


@dataclass(frozen=True)
class Location:
    """A path, relative ones read from `home`; an input (`file`, `folder`) must exist."""

    kind: str  # "output", "file" or "folder"

    def check(self, label, value, home=None):
        Text().check(label, value)
        if self.kind == "output":
            return value
        p = Path(value).expanduser()
        p = p if p.is_absolute() or home is None else (Path(home) / p).resolve()
        if not (p.is_file() if self.kind == "file" else p.is_dir()):
            raise ValueError(
                f"{label}: no {self.kind} {value!r} (relative paths start in notebooks/)"
            )
        return value

    def words(self) -> str:
        return "a file" if self.kind == "file" else "a folder"


def _parsed(label, parse: Callable, value):
    """`value` if `parse` takes it, else its ValueError with the parameter's name in front."""
    try:
        parse(value)
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None
    return value


@dataclass(frozen=True)
class Param:
    """One parameter: its kind and what it means; `note` follows the allowed values in the
    parameters cell (e.g. the paper's value)."""

    name: str
    kind: object
    meaning: str
    note: str = ""

    def comment(self) -> str:
        """The comment its line in a parameters cell carries."""
        note = f" ({self.note})" if self.note else ""
        return f"{self.meaning}: {self.kind.words()}{note}"


@dataclass(frozen=True)
class Parameters:
    """A notebook's parameters, and the checks that hold across them."""

    params: tuple[Param, ...]
    relations: tuple[tuple[str, Callable[[dict], bool]], ...] = field(default=())

    def __getitem__(self, name: str) -> Param:
        return self.by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self.by_name

    @cached_property
    def by_name(self) -> dict[str, Param]:
        return {p.name: p for p in self.params}

    def check(self, values: dict, home=None) -> None:
        """Each value against its declaration, then the relations; ValueError at the first."""
        for k, v in values.items():
            self[k].kind.check(k, v, home)
        for message, holds in self.relations:
            if not holds(values):
                raise ValueError(message)


# the output and record folders every notebook shares
FIGURES_DIR = Param("FIGURES_DIR", Location("output"), "figures",
                    "another run: runs/<run>/figures")  # fmt: skip
RESULTS_DIR = Param("RESULTS_DIR", Location("output"), "tables as CSV",
                    "another run: runs/<run>/results")  # fmt: skip
RECORDED_DIR = Param("RECORDED_DIR", Location("folder"), "the recorded tables read from")
