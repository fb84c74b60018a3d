"""The explorer: one seed's ranking, landscape, valley and verdict; the kernel sends numbers and
the browser draws.

`payload(setting)` is everything one view shows, as JSON-ready rows (the verdict, the ranking
table, both charts' data); `explorer(setting)` is the widget (workbench/explore/static/view.js draws it).
A change is one message in and one payload out: trace.run_setting scores the setting through the
cached encoders (a few numpy ops), and the browser swaps the data of vega views it built once.
Nothing here imports altair (seconds to import): the chart specs come pre-built in
workbench/explore/static/specs.json, and static figures are rendered from them with vl-convert.
"""

from __future__ import annotations

import html
import json
import os
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import pandas as pd
import traitlets

from workbench.common.encoders import ENCODERS, get_encoder
from workbench.common.io import InputError, csv_text, write_csv
from workbench.common.notebook import record, show_figure, show_table
from workbench.common.options import SLIDERS, check_choice, check_slider
from workbench.dsgc import viewdata
from workbench.dsgc.policies import GRAPH_POLICIES, POLICIES
from workbench.dsgc.scenario import KINDS, Scenario, ScenarioError, load_scenarios
from workbench.dsgc.trace import (
    WORKED,
    Setting,
    Trace,
    run_setting,
    scenario_for,
    valley_pair,
    verdict_line,
)
from workbench.dsgc.unseen import input_warnings
from workbench.explore import messages
from workbench.explore.parameters import BLOCKS, TEMPLATE_CHOICES
from workbench.explore.warmup import LOADING, WARMUP
from workbench.explore.widgets import BoundSpec, LiveView, show_live, specs, vega_lib

POLICY_LABELS = {
    "similarity": "similarity-only",
    "no-graph": "no-graph DSGC (λ = 0)",
    "dsgc": "DSGC",
    "recency": "recency (newest first)",
}
COLUMNS = ("rank", "id", "kind", "status", "cost", "sim", "r", "pi", "I", "text")
FLOATS = {"sim": 3, "r": 4, "pi": 4, "I": 4}
MAX_UPLOAD = 20_000_000  # characters; a scenario file for one room is far smaller


# --- the ranking table -----------------------------------------------------------


def ranking_records(trace: Trace) -> list[dict]:
    """Every block in ranking order as the table's columns (COLUMNS): the one place the ranking
    table is built; the page shows it as strings (`table_rows`), an export as a frame."""
    ret, sc = trace.retention, trace.scenario
    return [
        {
            "rank": k + 1,
            "id": sc.ids[i],
            "kind": sc.kinds[i],
            "status": "kept" if ret.kept[i] else "evicted",
            "cost": int(ret.costs[i]),
            "sim": round(float(ret.sims[i]), 6),  # the stored precision (trace records)
            "r": round(float(ret.r[i]), 6),
            "pi": round(float(ret.pi[i]), 6),
            "I": round(float(ret.scores[i]), 6),
            "text": sc.texts[i],
        }
        for k, i in enumerate(ret.order)
    ]


def ranking_table(trace: Trace) -> pd.DataFrame:
    """Every block in ranking order: rank, id, kind, kept/evicted, cost, sim, r, pi, I, text."""
    return pd.DataFrame(ranking_records(trace), columns=list(COLUMNS))


def table_rows(trace: Trace) -> list[list[str]]:
    """The ranking table as the strings the page shows (header first): floats at fixed places,
    built without pandas (the live view builds it on every change)."""
    rows = [list(COLUMNS)]
    for rec in ranking_records(trace):
        rows.append([f"{rec[c]:.{FLOATS[c]}f}" if c in FLOATS else str(rec[c]) for c in COLUMNS])
    return rows


# --- which knobs matter ----------------------------------------------------------------------------


def inactive(setting: Setting, from_file: bool = False) -> dict[str, str]:
    """Controls that cannot change this view, each with the one-line reason the page shows."""
    why = {}
    if setting.policy == "similarity":
        why.update(
            dict.fromkeys(("lam", "tau", "hops"), "not used by similarity-only (raw cosine)")
        )
    elif setting.policy == "recency":
        why.update(dict.fromkeys(("lam", "tau", "hops"), "not used by recency (store order)"))
    elif setting.policy == "no-graph":
        why["lam"] = "fixed at 0 by no-graph DSGC"
        why["hops"] = "not used: nothing propagates at λ = 0"
    if from_file:
        why["total_blocks"] = "set by the loaded file"
    elif setting.template == WORKED:
        why.update(
            dict.fromkeys(("seed", "total_blocks"), "fixed: the worked example is one scenario")
        )
    return why


ROOM_PORT = 8866  # `make app` / `python -m workbench.explore.app` serve the room here
ROOM_EXPLORER = f"http://127.0.0.1:{ROOM_PORT}/explorer"


# --- the state in a URL --------------------------------------------------------------------------

QUERY_KEYS = {  # the template travels as ?tpl= (links shared before keep working)
    "template": "tpl",
    "seed": "seed",
    "encoder": "encoder",
    "policy": "policy",
    "multiplier": "M",
    "lam": "lambda",
    "tau": "tau",
    "hops": "hops",
    "total_blocks": "blocks",
}
CHOICES = {
    "template": TEMPLATE_CHOICES,
    "encoder": ENCODERS,
    "policy": POLICIES,
    "total_blocks": BLOCKS,
}


def to_query(setting: Setting) -> str:
    """The setting as a query string (floats without trailing zeros)."""
    return urlencode(
        {
            QUERY_KEYS[k]: (f"{v:g}" if isinstance(v, float) else v)
            for k, v in asdict(setting).items()
        }
    )


def checked(name: str, raw) -> object:
    """One knob's value from text or JSON, converted and range-checked (ValueError if not)."""
    kind = {f.name: f.type for f in fields(Setting)}.get(name)
    if kind is None:
        raise ValueError(f"no control named {name!r}")
    want = {"int": "a whole number", "float": "a number", "str": "a string"}[kind]
    if isinstance(raw, (bool, list, dict)) or raw is None:
        raise ValueError(f"{name} must be {want}")
    try:
        value = {"int": int, "float": float, "str": str}[kind](raw)
    except (ValueError, OverflowError):
        raise ValueError(f"{name} must be {want}; got {str(raw)[:40]!r}") from None
    if kind == "int" and isinstance(raw, float) and raw != int(raw):
        raise ValueError(f"{name} must be a whole number")
    if name in CHOICES:
        return check_choice(name, value, CHOICES[name])
    if name in SLIDERS:
        return check_slider(name, value)
    return value


def from_query(query: str, default: Setting) -> tuple[Setting, list[str]]:
    """The setting a query string names (unknown keys skipped; a bad value is reported and the
    default kept for that knob)."""
    back = {v: k for k, v in QUERY_KEYS.items()}
    changes, problems = {}, []
    for key, raw in parse_qsl(query or "", keep_blank_values=True):
        name = back.get(key)
        if name is None:
            continue  # e.g. the room's token
        try:
            changes[name] = checked(name, raw)
        except ValueError as e:
            problems.append(f"link: {key}={raw!r} ignored ({e})")
    return default.with_(**changes), problems


# --- one view as JSON rows -------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """An uploaded scenario file (by its name) and which of its scenarios is shown."""

    name: str
    scenarios: tuple[Scenario, ...]
    index: int = 0

    @property
    def scenario(self) -> Scenario:
        return self.scenarios[self.index]

    def __repr__(self) -> str:
        return f"Upload({self.name}: {len(self.scenarios)} scenarios, showing {self.scenario.id})"


def payload(setting: Setting, upload: Upload | None = None, seq: int = 0) -> dict:
    """Everything the page shows for one setting (on a scenario from a file, if given)."""
    return view(setting, upload, seq)[1]


def view(setting: Setting, upload: Upload | None = None, seq: int = 0) -> tuple[Trace, dict]:
    """(the setting's Trace, its payload): the setting is run once, and the valley's two runs
    reuse it when it is one of them."""
    scenario = upload.scenario if upload is not None else None
    trace = run_setting(setting, scenario)
    before, after = valley_pair(setting, scenario, trace)
    sc = trace.scenario
    table = table_rows(trace)
    why = inactive(setting, from_file=upload is not None)
    state = {**asdict(setting), "scenario": 0}
    if upload is not None:
        state.update(template=f"file:{upload.name}", scenario=upload.index)
    stem = f"{sc.id}_{setting.encoder}_{setting.policy}".replace("/", "_").replace("=", "")
    return trace, {
        "seq": seq,
        "state": state,
        "controls": controls(setting, why, upload),
        "query": None if upload is not None else to_query(setting),
        "stem": stem,
        "scenario_id": sc.id,
        "verdict": verdict_line(trace),
        "warnings": input_warnings([sc], setting.encoder, setting.policy in GRAPH_POLICIES),
        "broken": not trace.full_chain_retained,
        "table": {
            "cols": table[0],
            "rows": table[1:],
            "cls": [f"wb-{r[3]} wb-kind-{r[2] if r[2] in KINDS else 'other'}" for r in table[1:]],
        },
        "land": {"family": viewdata.family(trace.policy), **viewdata.landscape_data(trace)},
        "valley": viewdata.valley_data(
            before, after, chosen=None if valley_run(setting) else POLICY_LABELS[setting.policy]
        ),
    }


def valley_run(setting: Setting) -> bool:
    """Is the chosen policy one of the valley's two runs (no-graph at lambda 0, or DSGC)?"""
    return setting.policy in ("no-graph", "dsgc")


def controls(setting: Setting, why: dict[str, str], upload: Upload | None) -> dict:
    """What each control shows: its options, whether it is shown, and why it is inactive."""
    templates = [[t, t] for t in TEMPLATE_CHOICES]
    if upload is not None:
        templates.append([f"file:{upload.name}", f"file: {upload.name}"])
    out = {k: {"shown": True, "why": why.get(k, "")} for k in (*QUERY_KEYS, "scenario")}
    out["template"]["options"] = templates
    out["scenario"].update(
        shown=upload is not None,
        options=[[i, sc.id] for i, sc in enumerate(upload.scenarios)] if upload else [],
    )
    out["seed"]["shown"] = upload is None
    out["total_blocks"]["options"] = [[b, str(b)] for b in BLOCKS]
    out["encoder"]["options"] = [[e, e] for e in ENCODERS]
    out["policy"]["options"] = [[p, POLICY_LABELS[p]] for p in POLICIES]
    for k, (_, lo, hi, step) in SLIDERS.items():  # the page's sliders take their range from here
        out[k].update(min=lo, max=hi, step=step)
    return out


def upload_name(name: str) -> str:
    """An uploaded file's name as the page shows it (its last part)."""
    return Path(name).name or "upload.jsonl"


def read_upload(name: str, text: str, limit: int = MAX_UPLOAD) -> tuple[Scenario, ...]:
    """Scenarios from an uploaded file's text, read exactly as `workbench evaluate` reads a file
    (scenario.load_scenarios, from memory: nothing is written); an error names the file (as
    uploaded), the line and the field."""
    name = upload_name(name)
    if len(text) > limit:
        raise ScenarioError(
            f"file too large ({len(text):,} characters; at most {limit:,} here)", path=name
        )
    data = text.encode("utf-8", "surrogatepass")
    scenarios = load_scenarios(name, data)
    if not scenarios:
        raise ScenarioError("no scenarios in the file", path=name)
    return tuple(scenarios)


# --- the sentence model -----------------------------------------------------------------------


def every_text() -> list[str]:
    """Every text (blocks and queries) of every scenario the explorer's controls can show: each
    template at each seed of its slider and each block count, and the worked example, once each
    in first-seen order (what a room warms the sentence cache with)."""
    _, lo, hi, _ = SLIDERS["seed"]
    out: dict[str, None] = {}
    for template in TEMPLATE_CHOICES:
        keys = (
            [(template, 0, 20)]
            if template == WORKED
            else ((template, seed, n) for seed in range(int(lo), int(hi) + 1) for n in BLOCKS)
        )
        for key in keys:
            sc = scenario_for(*key)
            out.update(dict.fromkeys([*sc.texts, sc.query]))
    return list(out)


def needs_model(setting: Setting, scenario: Scenario | None = None) -> bool:
    """Would this setting run the sentence model (an uncached text and the model not loaded)?"""
    if setting.encoder != "sentence" or WARMUP.ready:
        return False
    sc = scenario if scenario is not None else scenario_for(*_scenario_key(setting))
    return not get_encoder("sentence").has_all([*sc.texts, sc.query])


def _scenario_key(s: Setting) -> tuple:
    return (s.template, s.seed, s.total_blocks)


class ExplorerSession:
    """The explorer's state and its answers to the page, without a widget: the controls' setting,
    the loaded files, the run on the page, and the five fields the page draws from (`FIELDS`).
    The page sends `set`, `upload` and `export` messages (`handle`); every change of the fields
    goes through `_set`, so a host can forward it (the widget `Explorer` syncs them to its page;
    the room server holds one session per page and sends them over its websocket)."""

    FIELDS = ("payload", "busy", "ready", "message", "error")

    def __init__(self, setting: Setting, notes: list[str] | None = None, warm: bool = True):
        self.setting = setting
        self.upload: Upload | None = None  # the uploaded file shown, if any
        self.files: dict[str, tuple[Scenario, ...]] = {}  # every file uploaded to this page
        self.notes = notes or []
        self.pending: int | None = None  # a request waiting for the model
        self.trace: Trace | None = None  # the run the page shows
        for k, v in zip(self.FIELDS, ({}, False, False, "", ""), strict=True):
            if not hasattr(self, k):  # (a widget's fields are its synced traits, already there)
                setattr(self, k, v)
        self.refresh(0)
        if warm:
            WARMUP.start(self._warmed)

    def __repr__(self) -> str:  # short and stable: the stored text/plain of the widget output
        s = self.setting
        return f"{type(self).__name__}({s.template} seed {s.seed}, {s.encoder}, {s.policy})"

    def fields(self) -> dict:
        """The fields the page draws from, as they are now."""
        return {k: getattr(self, k) for k in self.FIELDS}

    def _set(self, **changes) -> None:
        """Change some fields at once (one message to the page)."""
        for k, v in changes.items():
            setattr(self, k, v)

    def send(self, content: dict) -> None:
        """A message to the page (a download); the host delivers it."""

    # --- state ---
    def apply(self, changes: dict) -> None:
        """Apply the page's changes (validated like a URL's); a bad value raises ValueError."""
        changes = dict(changes)
        if "scenario" in changes:
            idx = changes.pop("scenario")
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise ValueError("scenario must be a whole number")
            if self.upload is None or not 0 <= idx < len(self.upload.scenarios):
                raise ValueError(f"no scenario {idx} in the loaded file")
            self.upload = replace(self.upload, index=idx)
        tpl = changes.get("template")
        if isinstance(tpl, str) and tpl.startswith("file:"):
            name = changes.pop("template")[5:]
            if name not in self.files:
                raise ValueError(f"no loaded file {name!r}")
            if self.upload is None or self.upload.name != name:
                self.upload = Upload(name, self.files[name])
        elif tpl is not None:
            self.upload = None
        self.setting = self.setting.with_(**{k: checked(k, v) for k, v in changes.items()})

    # --- messages from the page ---
    def _on_msg(self, _widget, content: dict, _buffers) -> None:
        self.handle(content)

    def handle(self, content: dict) -> None:
        """One message from the page (`messages.EXPLORER`: `set`, `upload` or `export`). A bad
        message, value or file answers with an error, the view kept."""
        try:
            kind, m = messages.read(content, messages.EXPLORER)
        except ValueError as e:
            seq = content.get("seq") if isinstance(content, dict) else 0
            self._set(error=str(e), busy=False)
            return self._answer(seq if isinstance(seq, int) and not isinstance(seq, bool) else 0)
        seq = m["seq"]
        try:
            if kind == "set":
                self.apply(m["changes"])
            elif kind == "upload":
                self._set(busy=True)
                name = upload_name(m["name"])
                return self.add_file(name, read_upload(name, m["text"]), seq)
            else:  # export
                self.send(self.export(m["what"]))
                return self._answer(seq)
        except (InputError, ValueError, TypeError) as e:
            return self.fail(str(e), seq)
        self.refresh(seq)

    def add_file(self, name: str, scenarios: tuple[Scenario, ...], seq: int) -> None:
        """Keep an uploaded file's scenarios (read by `read_upload`) and show its first."""
        self.files[name] = scenarios
        self.upload = Upload(name, scenarios)
        self.refresh(seq)

    def fail(self, text: str, seq: int) -> None:
        """Say what went wrong in the page, the view kept."""
        self._set(error=text, busy=False)
        self._answer(seq)

    def _answer(self, seq: int) -> None:
        """Tell the page a request was handled without a new view (export, error)."""
        if self.payload:
            self._set(payload={**self.payload, "seq": seq})

    def export(self, what: str) -> dict:
        """A file the page downloads: the ranking table as CSV or the state as JSON."""
        trace = self.trace  # the view on the page
        stem = self.payload.get("stem", "explorer")
        if what == "csv":  # the result tables' format (io.csv_text)
            text = csv_text(ranking_table(trace))
            return {
                "type": "download",
                "name": f"{stem}_ranking.csv",
                "mime": "text/csv",
                "text": text,
            }
        state = {
            "setting": asdict(self.setting),
            "scenario_id": trace.scenario.id,
            "file": self.upload.name if self.upload else None,
            "query": None if self.upload else to_query(self.setting),
            "verdict": verdict_line(trace),
        }
        text = json.dumps(state, indent=1) + "\n"
        return {
            "type": "download",
            "name": f"{stem}_state.json",
            "mime": "application/json",
            "text": text,
        }

    # --- drawing ---
    def compute(self, setting: Setting, upload: Upload | None, seq: int) -> tuple[Trace, dict]:
        """The view of a setting (`view`); a host may answer from a cache of its own."""
        return view(setting, upload, seq)

    def refresh(self, seq: int) -> None:
        """Compute the view for the current state and send it as one message."""
        s, sc = self.setting, (self.upload.scenario if self.upload else None)
        if needs_model(s, sc):  # never block the kernel on the model: wait for the warm thread
            self.pending = seq
            self._set(busy=True, ready=False, message=LOADING)
            WARMUP.start(self._warmed)
            return
        if s.encoder == "sentence" and not get_encoder("sentence").has_all(
            [*(sc or scenario_for(*_scenario_key(s))).texts]
        ):
            self._set(busy=True)  # encoding new texts takes a moment: say so at once
        try:
            t = time.perf_counter()
            trace, p = self.compute(s, self.upload, seq)
            p["kernel_ms"] = round((time.perf_counter() - t) * 1000, 2)
        except (InputError, ValueError) as e:
            self._set(error=str(e), busy=False)
            return self._answer(seq)
        self.trace = trace
        # one message: table, verdict, both charts' data, busy off
        self._set(payload=p, error="", message="; ".join(self.notes), busy=False, ready=True)

    def _warmed(self, error: str | None) -> None:
        if error:
            self.notes = [*self.notes, error]
        if self.pending is not None:
            seq, self.pending = self.pending, None
            if error:
                self.setting = self.setting.with_(encoder="lexical")
            self.refresh(seq)
        elif error:
            self._set(message="; ".join(self.notes))


class Explorer(ExplorerSession, LiveView):
    """The explorer widget: controls, verdict, landscape, valley, ranking table; upload, share
    and export (an `ExplorerSession` whose fields are synced traits)."""

    payload = traitlets.Dict().tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
    ready = traitlets.Bool(False).tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    follow = traitlets.Bool(False).tag(sync=True)  # the page's address follows the state (room)
    # "copy link" hands out the room's explorer page (`make app` on this machine), whose token
    # the room prints; the room's own pages set their address and token instead
    link_base = traitlets.Unicode(ROOM_EXPLORER).tag(sync=True)
    link_extra = traitlets.Unicode("").tag(sync=True)

    def __init__(self, setting: Setting, notes: list[str] | None = None, warm: bool = True):
        LiveView.__init__(self, kind="explorer", lib=vega_lib(), specs=specs())
        self.on_msg(self._on_msg)
        ExplorerSession.__init__(self, setting, notes, warm)

    def _set(self, **changes) -> None:
        with self.hold_sync():
            super()._set(**changes)

    def send(self, content: dict, buffers=None) -> None:
        LiveView.send(self, content, buffers)

    def _ipython_display_(self) -> None:
        s = self.setting
        what = f"{s.template}, seed {s.seed}, {s.encoder} encoder, {s.policy}"
        show_live(
            self,
            f"<p><b>The explorer</b> ({html.escape(what)}): live sliders over one seed's ranking. "
            "It needs the running notebook; without one, its starting view is drawn below as "
            "text and figures.</p>",
            f"the explorer, {what}",
        )


def live_frontend() -> bool:
    """Is a person's page attached to this kernel (a JupyterLab session), rather than a batch
    run (papermill, nbval)? Jupyter Server names the session of the kernels it starts."""
    return "JPY_SESSION_NAME" in os.environ


def explorer(setting: Setting | None = None, warm: bool | None = None) -> Explorer:
    """The live explorer for a setting. `warm` loads the sentence model in the background at
    once (default: when a page is attached, not in a batch run)."""
    setting = setting or Setting()
    notes: list[str] = []
    if warm is None:  # WORKBENCH_WARM=0 turns it off (the browser test's pages never need it)
        warm = live_frontend() and os.environ.get("WORKBENCH_WARM", "1") != "0"
    return Explorer(setting, notes, warm=warm)


# --- a static rendering, for stored notebook outputs --------------------------------------------


def snapshot(setting: Setting, figures_dir="../figures", results_dir=None, name="explorer"):
    """The starting view as text and figures, for the notebook's stored outputs: the verdict,
    the ranking table, NAME_landscape / NAME_valley in figures_dir, (given results_dir) the
    ranking as NAME_ranking.csv, and the records the tests read (verdict, kept, chain_ranks).
    (The room never runs it: its pages are drawn by the server, which writes nothing.)"""
    from IPython.display import display

    trace, p = view(setting)
    display({"text/plain": p["verdict"]}, raw=True)
    for w in p["warnings"]:
        display({"text/plain": f"warning: {w}"}, raw=True)
    table = ranking_table(trace)
    show_table(table.drop(columns=["text"]), digits=4)
    show_figure(
        BoundSpec(p["land"]["family"], p["land"], width=720), f"{name}_landscape", figures_dir
    )
    show_figure(BoundSpec("valley", p["valley"], width=420), f"{name}_valley", figures_dir)
    if results_dir is not None:
        write_csv(table, Path(results_dir) / f"{name}_ranking.csv")
    record("verdict", p["verdict"])
    record("kept", trace.kept_ids)
    record("chain_ranks", trace.chain_ranks)
    return p["verdict"]
