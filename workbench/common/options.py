"""Range checks for numbers and names, shared by the command line and the library.

`check_number` is the one place a knob's allowed range is enforced: argparse types built here
(`number`, `names`, `regex`, `out_file`, `out_dir`) call it at parse time, so a bad option is
a usage error naming the option and the range, and `PolicySetting` and protocol files call it
too, so Python users get the same errors. The ranges are listed in RANGES; the narrower ranges
of the explorer's and the workshop's sliders in SLIDERS (the page draws its sliders from them).
"""

from __future__ import annotations

import argparse
import math
import numbers
import re
from collections.abc import Callable, Sequence

from workbench.common.io import InputError, check_output_dir, check_output_file

MAX_HOPS = 20  # each hop is one scatter-add; no benchmark chain is longer than a few hops

# name -> (low, high, low is excluded, integers only). The bounds past "positive and finite"
# keep every score, budget and int64 sum finite: e.g. tau below 1e-6 already makes the softmax
# an exact argmax, and a multiplier of 1e6 is a budget a million times the chain's mass.
RANGES: dict[str, tuple[float, float, bool, bool]] = {
    "tau": (1e-6, 1e6, False, False),
    "lambda": (0.0, 1e6, False, False),
    "delta": (0.0, 1e3, False, False),
    "density": (0.0, 10.0, False, False),
    "budget_multiplier": (0.0, 1e6, True, False),
    "hops": (1, MAX_HOPS, False, True),  # hops=0 would be lam=0 (no-graph DSGC) by another name
    "drop": (0.0, 1.0, False, False),
    "spurious": (0, 10_000, False, True),
    "total_blocks": (1, 100_000, False, True),
    "blocks": (1, 100_000, False, True),
    "min_evidence": (1, 10_000, False, True),  # evidence turns a conversation question needs
    "budget": (1, 2**53, False, True),
    "turns": (1, 1_000_000, False, True),
    "capacity": (1, 2**53, False, True),
    "boot": (1, 100_000, False, True),
    "episodes": (1, 1_000_000, False, True),
    "K": (1, 1_000_000, False, True),
    "k": (1, 1_000_000, False, True),
    "seed": (0, 2**63 - 1, False, True),
    "recall_density": (0.0, 1.0, False, False),  # distractor share of a stream, below 1
    "floor": (-1e6, 1e6, False, False),  # the closure gate's eviction-margin floor: finite
    "threshold": (-1.0, 1.0, False, False),  # a cosine
    "restore_miss": (0.0, 1.0, False, False),  # share of tombstone restores the store fails
}
_OPEN_HIGH = {"recall_density"}  # ranges whose high end is excluded too

# a slider -> (its knob in RANGES, low, high, step): narrower than the knob, the span a person
# explores by hand (seeds: the first hundred; hops: as deep as the benchmark's chains go)
SLIDERS: dict[str, tuple[str, float, float, float]] = {
    "seed": ("seed", 0, 99, 1),
    "multiplier": ("budget_multiplier", 1.0, 5.0, 0.25),
    "lam": ("lambda", 0.0, 3.0, 0.25),
    "tau": ("tau", 0.05, 1.0, 0.05),
    "hops": ("hops", 1, 3, 1),
}


def describe(name: str) -> str:
    """The allowed range of a knob in words, e.g. 'a finite number in (0, 1e+06]'."""
    lo, hi, lo_open, integer = RANGES[name]
    hi_open = name in _OPEN_HIGH
    if integer:
        return f"an integer from {lo:g} to {hi:g}" if hi < 1e15 else f"an integer >= {lo:g}"
    return f"a finite number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"


def check_number(name: str, value, label: str | None = None):
    """`value` if it lies in RANGES[name], else ValueError naming `label` (default `name`) and
    the range. Integers must be ints (a bool is not), numbers must be finite."""
    lo, hi, lo_open, integer = RANGES[name]
    label = label or name
    bad = ValueError(f"{label} must be {describe(name)}; got {_show(repr(value))[1:-1]}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise bad
    if integer and not isinstance(value, numbers.Integral):
        if not (math.isfinite(value) and float(value).is_integer()):
            raise bad
    if integer:
        value = int(value)
    if not math.isfinite(value) or value < lo or value > hi:
        raise bad
    if (lo_open and value == lo) or (name in _OPEN_HIGH and value == hi):
        raise bad
    return value


def check_slider(slider: str, value, label: str | None = None):
    """`check_number` on the slider's knob, then the slider's narrower range (SLIDERS)."""
    knob, lo, hi, _ = SLIDERS[slider]
    label = label or slider
    value = check_number(knob, value, label)
    if not lo <= value <= hi:
        raise ValueError(f"{label} must be in [{lo:g}, {hi:g}]; got {value!r}")
    return value


def check_choice(label: str, value, choices: Sequence):
    """`value` if it is one of `choices`, else ValueError naming `label` and the choices."""
    if value not in choices:
        raise ValueError(f"{label} must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


# --- argparse types ----------------------------------------------------------------------------


def _typed(fn: Callable, name: str) -> Callable:
    fn.__name__ = name  # argparse names the type in its fallback message
    return fn


def _show(text: str) -> str:
    """A value as quoted in an error message (a 5000-digit number is cut short)."""
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def _parse(text: str, integer: bool):
    try:
        return int(text.strip()) if integer else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{'an integer' if integer else 'a number'} is expected; got {_show(text)}"
        ) from None


def number(name: str) -> Callable[[str], float | int]:
    """An argparse `type` for the knob `name` of RANGES (argparse adds the option's name)."""
    integer = RANGES[name][3]

    def parse(text: str):
        value = _parse(text, integer)
        try:
            return check_number(name, value, label="value")
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e).replace("value must be", "must be")) from None

    return _typed(parse, name)


def number_list(name: str) -> Callable[[str], str]:
    """Comma-separated values of the knob `name`, each range-checked; returns the text, cleaned."""
    integer = RANGES[name][3]

    def parse(text: str) -> str:
        items = [x.strip() for x in text.split(",") if x.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"give at least one value; got {_show(text)}")
        for x in items:
            try:
                check_number(name, _parse(x, integer))
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"each value must be {describe(name)}; got {_show(x)}"
                ) from None
        return ",".join(items)

    return _typed(parse, f"{name} list")


def names(choices: Sequence[str]) -> Callable[[str], str]:
    """Comma-separated names, each one of `choices`, at least one; returns the text, cleaned."""

    def parse(text: str) -> str:
        items = [x.strip() for x in text.split(",") if x.strip()]
        unknown = [x for x in items if x not in choices]
        if not items or unknown:
            what = f"unknown {', '.join(map(repr, unknown))}" if unknown else f"none in {text!r}"
            raise argparse.ArgumentTypeError(
                f"{what}; give one or more of {', '.join(choices)}, comma-separated"
            )
        return ",".join(items)

    return _typed(parse, "names")


def regex(groups: tuple[int, ...] | None = None) -> Callable[[str], str]:
    """A regular expression that compiles and (if `groups` is given) has one of the allowed
    numbers of capturing groups (re.findall returns group 1 when there is one, tuples when
    there are more); returns the pattern text."""

    def parse(text: str) -> str:
        try:
            compiled = re.compile(text)
        except re.error as e:
            raise argparse.ArgumentTypeError(f"not a valid regular expression: {e}") from None
        if groups is not None and compiled.groups not in groups:
            want = " or ".join(map(str, groups))
            raise argparse.ArgumentTypeError(
                f"needs {want} capturing group(s) (group 1 is the handle; write other groups "
                f"as (?:...)); {_show(text)} has {compiled.groups}"
            )
        return text

    return _typed(parse, "regex")


def _path_type(check: Callable, name: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            check(text)
        except InputError as e:
            raise argparse.ArgumentTypeError(f"{text!r} {e.message}") from None
        return text

    return _typed(parse, name)


out_file = _path_type(check_output_file, "output file")  # not a folder, not under a file
out_dir = _path_type(check_output_dir, "output folder")  # see io.atomic_dir for the rules
