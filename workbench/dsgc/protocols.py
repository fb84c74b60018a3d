"""Protocols (JSON): named grids of runs, read with every field checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path

from workbench.common.encoders import ENCODERS
from workbench.common.io import InputError, read_json
from workbench.common.options import check_number
from workbench.common.reference import data_path
from workbench.common.seeds import format_seeds, parse_seeds
from workbench.dsgc.generator import TEMPLATES, TIERS, generate
from workbench.dsgc.policies import POLICIES, PolicySetting
from workbench.dsgc.scenario import Scenario


def _list(v, what: str, item) -> tuple:
    """A non-empty JSON list read item by item (an item's error names its index)."""
    if not isinstance(v, list) or not v:
        raise ValueError(f"must be a non-empty list of {what}")
    out = []
    for i, x in enumerate(v):
        try:
            out.append(item(x))
        except ValueError as e:
            raise ValueError(f"item {i}: {e}") from None
    return tuple(out)


def _text(v) -> str:
    if not isinstance(v, str):
        raise ValueError(f"must be a string, got {json.dumps(v)[:40]}")
    return v


def _one_of(choices):
    def read(v) -> str:
        if v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}; got {json.dumps(v)[:40]}")
        return v

    return read


def _knob(name: str):
    return lambda v: check_number(name, v)


def _knobs(name: str, what: str):
    return lambda v: _list(v, what, _knob(name))


def _noise(v) -> tuple[float, int]:
    if not isinstance(v, list) or len(v) != 2:
        raise ValueError("must be a [drop fraction, spurious edges] pair")
    return float(check_number("drop", v[0])), check_number("spurious", v[1])


REQUIRED = ("name", "description")  # every other field defaults to the main protocol's
TRUE = "true"  # the graph source of the scenarios' own edges

# the run-table columns a summary may group by
SUMMARY_KEYS = (
    "encoder",
    "template",
    "regime",
    "policy",
    "seed",
    "total_blocks",
    "budget_multiplier",
    "lambda",
    "hops",
    "delta",
    "drop",
    "spurious",
    "graph",
)


def _graph_name(v) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError(
            f"must be a graph source name ('true' or an inducer); got {json.dumps(v)[:40]}"
        )
    return v


@dataclass(frozen=True)
class Graph:
    """Which edges a run ranks over: a source ('true', the scenarios' own edges, or an inducer's
    name) and, on the true edges, the noise put on them (a share dropped, spurious ones added)."""

    source: str = TRUE
    drop: float = 0.0
    spurious: int = 0

    @property
    def columns(self) -> dict:
        """The columns that label a run on this graph."""
        return {"graph": self.source, "drop": self.drop, "spurious": self.spurious}

    def __repr__(self) -> str:
        noise = f", drop {self.drop:g}, +{self.spurious}" if self.drop or self.spurious else ""
        return f"Graph({self.source}{noise})"


@dataclass(frozen=True)
class GridPoint:
    """One setting of a protocol's grid: the policy and its knobs, the budget multiplier, the
    graph."""

    policy: PolicySetting
    multiplier: float
    graph: Graph

    def __repr__(self) -> str:
        return f"GridPoint({self.policy!r}, M={self.multiplier:g}, {self.graph!r})"


@dataclass(frozen=True)
class Protocol:
    """A named grid: templates x seeds x encoders x policies x M x lambda x hops x size x graph noise.

    The defaults below are the paper's main protocol; a protocol file lists only what it changes.
    """

    name: str
    templates: tuple[str, ...] = tuple(TEMPLATES)
    seeds: tuple[int, int] = (0, 15)  # half-open [A, B); written "A:B" in a protocol file
    encoders: tuple[str, ...] = ("lexical", "sentence")
    policies: tuple[str, ...] = ("similarity", "no-graph", "dsgc")
    budget_multipliers: tuple[float, ...] = (2.0,)
    lambdas: tuple[float, ...] = (1.0,)
    tau: float = 0.25
    hops: tuple[int, ...] = (1,)
    delta: float = 0.5
    total_blocks: tuple[int, ...] = (20,)
    tier: str = "medium"
    graph_noise: tuple[tuple[float, int], ...] = ((0.0, 0),)  # (drop fraction, spurious edges)
    summary: tuple[str, ...] = ("encoder", "regime", "policy")
    description: str = ""
    paper_table: str = ""
    deltas: tuple[float, ...] = ()  # dampings swept for hops > 1; empty: `delta` alone
    engine: str = "trace"  # "trace": a Trace per run; "batch": many per array pass, sweep metrics
    graphs: tuple[str, ...] = (TRUE,)  # graph sources: 'true', or an inducer's name (beyond)

    # how each field is read from JSON: type, names and ranges checked (workbench.common.options)
    _READ = {
        "name": _text,
        "templates": lambda v: _list(v, "template names", _one_of(tuple(TEMPLATES))),
        "seeds": parse_seeds,
        "encoders": lambda v: _list(v, "encoder names", _one_of(ENCODERS)),
        "policies": lambda v: _list(v, "policy names", _one_of(POLICIES)),
        "budget_multipliers": _knobs("budget_multiplier", "budget multipliers"),
        "lambdas": _knobs("lambda", "lambdas"),
        "tau": _knob("tau"),
        "hops": _knobs("hops", "hop counts"),
        "delta": _knob("delta"),
        "total_blocks": _knobs("total_blocks", "block counts"),
        "tier": _one_of(TIERS),
        "graph_noise": lambda v: _list(v, "[drop, spurious] pairs", _noise),
        "summary": lambda v: _list(v, "run-table columns", _one_of(SUMMARY_KEYS)),
        "description": _text,
        "paper_table": _text,
        "deltas": lambda v: () if v == [] else _knobs("delta", "dampings")(v),
        "engine": _one_of(("trace", "batch")),
        "graphs": lambda v: _list(v, "graph source names", _graph_name),
    }

    @classmethod
    def from_dict(cls, d: dict, path=None) -> Protocol:
        """A protocol from its JSON object; unknown or malformed fields name the file and field."""
        if not isinstance(d, dict):
            raise InputError("a protocol is a JSON object", path=path)
        unknown = sorted(set(d) - {f.name for f in fields(cls)})
        if unknown:
            raise InputError(f"unknown field(s) {unknown}", path=path)
        kwargs = {}
        for key, value in d.items():
            try:
                kwargs[key] = cls._READ[key](value)
            except (TypeError, ValueError) as e:
                raise InputError(str(e), path=path, field=key) from None
        for key in REQUIRED:  # a protocol names itself and says what its grid is for
            if key not in kwargs:
                raise InputError("missing required field", path=path, field=key)
            if not kwargs[key].strip():
                raise InputError("must be a non-empty string", path=path, field=key)
        return cls(**kwargs)

    @classmethod
    def load(cls, name_or_path: str) -> Protocol:
        """A protocol by name (shipped with the package) or from a JSON file path."""
        path = Path(name_or_path)
        if path.suffix:
            return cls.from_dict(read_json(path), path=path)
        else:
            res = data_path("protocols", f"{name_or_path}.json")
            if not res.is_file():
                raise ValueError(
                    f"no protocol {name_or_path!r}; known protocols: {', '.join(known_protocols())}"
                )
            text, path = res.read_text(encoding="utf-8"), f"protocol {name_or_path!r}"
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(
                f"invalid JSON ({e.msg.removesuffix(' at')} at line {e.lineno})", path=path
            ) from None
        return cls.from_dict(d, path=path)

    def to_dict(self) -> dict:
        """The fields that differ from the defaults, as a protocol file holds them."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "name" or value != f.default:
                if f.name == "seeds":
                    value = format_seeds(*value)
                elif isinstance(value, tuple):
                    value = [list(v) if isinstance(v, tuple) else v for v in value]
                out[f.name] = value
        return out

    def with_(self, **changes) -> Protocol:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def grid(self) -> Iterator[GridPoint]:
        """Every setting the protocol runs, in run order: policies outer, then M, lambda, hops,
        damping and graph (each source, then each noise level on the true edges). A policy that
        reads no graph's knobs (similarity, recency, no-graph) runs once per M and graph."""
        deltas = self.deltas or (self.delta,)
        first = (self.lambdas[0], self.hops[0], deltas[0])
        graphs = [Graph(src) for src in self.graphs if src != TRUE]
        if TRUE in self.graphs:
            at = self.graphs.index(TRUE)
            graphs[at:at] = [Graph(TRUE, float(d), int(s)) for d, s in self.graph_noise]
        elif self.graph_noise != ((0.0, 0),):
            raise ValueError(f"protocol {self.name!r}: graph_noise applies to the true edges only")
        for pol in self.policies:
            for mult in self.budget_multipliers:
                for lam in self.lambdas:
                    for hops in self.hops:
                        for delta in deltas:
                            if pol != "dsgc" and (lam, hops, delta) != first:
                                continue
                            setting = PolicySetting(pol, lam, self.tau, hops, delta)
                            for g in graphs:
                                yield GridPoint(setting, float(mult), g)


def known_protocols() -> list[str]:
    """The names of the protocols shipped with the package."""
    return sorted(
        p.name[: -len(".json")]
        for p in data_path("protocols").iterdir()
        if p.name.endswith(".json")
    )


def scenarios_for(protocol: Protocol) -> list[Scenario]:
    lo, hi = protocol.seeds
    return [
        generate(t, s, n, protocol.tier)
        for n in protocol.total_blocks
        for t in protocol.templates
        for s in range(lo, hi)
    ]


def protocol_for(name: str, seeds=None, encoders=None, **overrides) -> Protocol:
    """A named protocol with notebook-style overrides: SEEDS as N or 'A:B', ENCODERS as
    'lexical,sentence' or a list, and scalar or list values for the grid fields."""
    changes = {}
    if seeds is not None:
        changes["seeds"] = parse_seeds(seeds)
    if encoders is not None:
        changes["encoders"] = tuple(encoders.split(",") if isinstance(encoders, str) else encoders)
    for key, value in overrides.items():
        if value is None:
            continue
        if isinstance(value, str) and key in ("templates", "policies"):
            value = value.split(",")
        changes[key] = tuple(value) if isinstance(value, list | tuple) else (value,)
    return Protocol.load(name).with_(**changes)
