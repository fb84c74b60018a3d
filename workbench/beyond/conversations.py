"""Long conversations in LoCoMo's published format, read into scenarios.

LoCoMo (snap-research/locomo) publishes a JSON list of samples. Each sample has a `conversation`
(`speaker_a`, `speaker_b`, `session_N`: a list of turns `{speaker, dia_id, text, img_url?,
blip_caption?}`, `session_N_date_time`) and `qa` (a list of `{question, answer, evidence,
category}`, `evidence` a list of turn ids such as `D3:11`).

Each question becomes one scenario: every turn of its conversation is a block in the order
spoken ("Speaker: text", and the caption of a photo the speaker shared), the question is the
query, the evidence turns are the chain, and the scenario's edges are the right graph: every
evidence turn joined to every other, both ways (an upper bound no reader of the text has).

The published file is not clean, so the reader repairs what it can read one way only and says
so: an evidence entry holding several ids (`D8:6; D9:17`, `D9:1 D4:4`) is split, a turn number
written with a leading zero (`D30:05`) is that turn (`D30:5`). An evidence id that names no turn
(`D`, `D:11:26`, a turn past its session's end) leaves its question out, with a warning naming
the sample and the question. A sample that is not in the format (no `qa`, a turn without a
`dia_id`) is an error naming the sample and the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from workbench.beyond.induce import SOURCES, induce_weighted, score_pairs
from workbench.common import stats
from workbench.common.encoders import get_encoder
from workbench.common.io import InputError, read_json
from workbench.dsgc.policies import PolicySetting
from workbench.dsgc.protocols import Protocol
from workbench.dsgc.runs import run_protocol
from workbench.dsgc.scenario import Block, Scenario
from workbench.dsgc.trace import run

TEMPLATE = "conversation"  # every question's scenario; its sample id is its `conversation`
MIN_EVIDENCE = 2  # the questions whose answer needs two turns or more
_SESSION = re.compile(r"session_(\d+)")
_TURN_ID = re.compile(r"D(\d+):(\d+)")
_SPLIT = re.compile(r"[;,\s]+")


class ConversationError(InputError):
    """A sample is not in LoCoMo's format."""


@dataclass
class Read:
    """What the reader made of a file: the scenarios, and what it repaired or left out."""

    scenarios: list[Scenario] = field(default_factory=list)
    samples: int = 0
    turns: int = 0
    questions: int = 0
    repairs: list[str] = field(default_factory=list)  # evidence read another way than written
    warnings: list[str] = field(default_factory=list)  # questions left out, and why
    fewer: int = 0  # questions with fewer evidence turns than asked for


@dataclass(frozen=True)
class Turn:
    id: str
    session: int
    text: str


def turn_text(turn: dict) -> str:
    """A block's text: 'Speaker: text', with the caption of a photo the speaker shared."""
    text = f"{turn['speaker']}: {turn['text']}".strip()
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text += f" [shares a photo: {caption.strip()}]"
    return text


def _need(obj, key: str, kind, where: str, sample: str, path):
    if not isinstance(obj, dict) or key not in obj:
        raise ConversationError(f"sample {sample}: missing", path=path, field=f"{where}{key}")
    value = obj[key]
    if not isinstance(value, kind):
        name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ConversationError(
            f"sample {sample}: must be a {name}, not {type(value).__name__}",
            path=path,
            field=f"{where}{key}",
        )
    return value


def sessions(conversation: dict, sample: str, path=None) -> tuple[list[Turn], dict[int, str]]:
    """The turns of a conversation in the order spoken (sessions by number), and each session's
    date as written."""
    numbers = sorted(int(m[1]) for k in conversation if (m := _SESSION.fullmatch(k)))
    turns: list[Turn] = []
    dates: dict[int, str] = {}
    for n in numbers:
        key = f"session_{n}"
        listed = _need(conversation, key, list, "conversation.", sample, path)
        date = conversation.get(f"{key}_date_time")
        if isinstance(date, str):
            dates[n] = date
        for i, t in enumerate(listed):
            where = f"conversation.{key}[{i}]."
            for name in ("speaker", "dia_id", "text"):
                _need(t, name, str, where, sample, path)
            turns.append(Turn(t["dia_id"], n, turn_text(t)))
    if not turns:
        raise ConversationError(
            f"sample {sample}: no session_N lists", path=path, field="conversation"
        )
    return turns, dates


def evidence_ids(entries) -> tuple[list[str], list[str], list[str]]:
    """(ids read, what was repaired, what could not be read) from a question's evidence list."""
    ids, repaired, unread = [], [], []
    for entry in entries if isinstance(entries, list) else [entries]:
        if not isinstance(entry, str):
            unread.append(repr(entry))
            continue
        parts = [p for p in _SPLIT.split(entry.strip()) if p]
        if len(parts) > 1:
            repaired.append(f"{entry!r} read as {len(parts)} ids")
        for p in parts:
            m = _TURN_ID.fullmatch(p)
            if m is None:
                unread.append(repr(p))
                continue
            canon = f"D{int(m[1])}:{int(m[2])}"
            if canon != p:
                repaired.append(f"{p!r} read as {canon!r}")
            if canon not in ids:
                ids.append(canon)
    return ids, repaired, unread


def sample_scenarios(
    sample: dict, index: int, out: Read, *, min_evidence: int = MIN_EVIDENCE, dates: bool = False,
    path=None,
) -> None:  # fmt: skip
    """Add one sample's question scenarios (and its repairs and warnings) to `out`."""
    name = sample.get("sample_id") if isinstance(sample, dict) else None
    name = str(name) if isinstance(name, str | int) else f"#{index}"
    if not isinstance(sample, dict):
        raise ConversationError(f"sample {name}: not a JSON object", path=path, field=f"[{index}]")
    conversation = _need(sample, "conversation", dict, "", name, path)
    qa = _need(sample, "qa", list, "", name, path)
    turns, when = sessions(conversation, name, path)
    seen: dict[str, int] = {}
    for i, t in enumerate(turns):
        if t.id in seen:
            raise ConversationError(
                f"sample {name}: dia_id {t.id!r} given to two turns", path=path,
                field=f"conversation.session_{t.session}",
            )  # fmt: skip
        seen[t.id] = i
    texts = [
        f"[{when[t.session]}] {t.text}" if dates and t.session in when else t.text for t in turns
    ]
    # every turn a filler block, built once a sample; each question's scenario swaps in its chain
    fillers = tuple(Block(t.id, text, "filler") for t, text in zip(turns, texts, strict=True))
    out.samples += 1
    out.turns += len(turns)
    for q_index, q in enumerate(qa):
        where = f"qa[{q_index}]."
        question = _need(q, "question", str, where, name, path)
        _need(q, "evidence", (list, str), where, name, path)
        out.questions += 1
        label = f"sample {name}, question {q_index} ({question!r})"
        ids, repaired, unread = evidence_ids(q["evidence"])
        missing = [repr(e) for e in ids if e not in seen]
        if unread or missing or not ids:
            why = ", ".join(unread + missing) or "none given"
            out.warnings.append(f"{label}: evidence names no turn ({why}); question left out")
            continue
        out.repairs += [f"{label}: evidence {r}" for r in repaired]
        if len(ids) < min_evidence:
            out.fewer += 1
            continue
        out.scenarios.append(question_scenario(name, q_index, q, fillers, ids, seen, when))


def question_scenario(name, q_index, q, fillers, ids, seen, when) -> Scenario:
    """One question: every turn a block (`fillers`: the sample's turns as filler blocks), the
    evidence turns the chain (in the order spoken), the right graph as its edges (every evidence
    turn to every other, both ways)."""
    chain = sorted(ids, key=seen.__getitem__)
    blocks = list(fillers)
    for c in chain:
        b = blocks[seen[c]]
        blocks[seen[c]] = Block(b.id, b.text, "chain")
    edges = tuple((a, b) for a in chain for b in chain if a != b)
    answer = q.get("answer", q.get("adversarial_answer"))
    return Scenario(
        id=f"{name}/q{q_index}",
        query=q["question"],
        blocks=tuple(blocks),
        edges=edges,
        chain=tuple(chain),
        template=TEMPLATE,
        regime=f"category {q['category']}" if "category" in q else "",
        answer=None if answer is None else str(answer),
        metadata={"conversation": name, "session_dates": {f"D{k}": v for k, v in when.items()}},
    )


def read_conversations(
    path: str | os.PathLike, *, min_evidence: int = MIN_EVIDENCE, dates: bool = False
) -> Read:
    """Every question with at least `min_evidence` evidence turns of a LoCoMo-format file, as
    scenarios (`dates`: each block's text begins with its session's date)."""
    samples = read_json(path, ConversationError)
    if not isinstance(samples, list):
        raise ConversationError(
            f"must be a JSON list of samples (LoCoMo's format), not {type(samples).__name__}",
            path=path,
        )
    out = Read()
    for i, sample in enumerate(samples):
        sample_scenarios(sample, i, out, min_evidence=min_evidence, dates=dates, path=path)
    return out


def summary(read: Read, min_evidence: int) -> str:
    """One line: what the file held and what was kept."""
    left = len(read.warnings)
    return (
        f"{read.samples} conversations, {read.turns:,} turns, {read.questions:,} questions: "
        f"{len(read.scenarios):,} kept (evidence of {min_evidence} turns or more), "
        f"{read.fewer:,} with fewer, {left:,} left out (evidence naming no turn), "
        f"{len(read.repairs):,} evidence entries repaired"
    )


def lines(messages: Iterable[str], kind: str) -> list[str]:
    return [f"workbench conversations: {kind}: {m}" for m in messages]


# --- the study: where the graph is the gap ----------------------------------------------------

GRAPHS = {"true": "right graph", "mentions": "induced graph"}  # source -> what a table calls it
ARMS = ("recency", "similarity-only", "DSGC, induced graph", "DSGC, right graph")


def study_runs(scenarios, encoders=("lexical", "sentence"), multipliers=None) -> pd.DataFrame:
    """The `conversations` protocol on these scenarios: one row per encoder, M, arm and question
    (`kept`: every evidence turn survived eviction)."""
    p = Protocol.load("conversations").with_(
        encoders=tuple(encoders),
        budget_multipliers=None if multipliers is None else tuple(multipliers),
    )
    runs = run_protocol(p, scenarios, sources={"mentions": SOURCES["mentions"]})
    graph = runs["graph"].fillna("true") if "graph" in runs else pd.Series("true", runs.index)
    dsgc = runs.policy == "dsgc"
    arm = np.where(
        dsgc,
        "DSGC, " + graph.map(GRAPHS),
        runs.policy.map({"similarity": "similarity-only", "recency": "recency"}),
    )
    # recency and similarity read no graph: kept once each, from the right graph's runs
    runs = runs.assign(arm=arm)[dsgc | (graph == "true")]
    cols = ["encoder", "budget_multiplier", "arm", "scenario_id", "full_chain_retained"]
    out = runs[cols].rename(columns={"scenario_id": "question", "full_chain_retained": "kept"})
    out["conversation"] = out.question.str.rsplit("/", n=1).str[0]
    return out.reset_index(drop=True)


def study_table(runs: pd.DataFrame, **boot) -> pd.DataFrame:
    """Per encoder and M: each arm's share of questions whose evidence survived, with its bootstrap
    interval over the questions; each DSGC arm's questions won and lost against similarity-only
    (paired, with the interval of the difference); and the share of the right graph's gain over
    similarity-only that the induced graph gets."""
    keys = ["encoder", "budget_multiplier", "arm"]
    kept = stats.interval_table(runs, keys, metric="kept", unit="question", **boot)
    dsgc = runs[runs.arm.isin(["similarity-only", *ARMS[2:]])]
    rows = []
    for other in ARMS[2:]:
        p = stats.paired_table(
            dsgc[dsgc.arm.isin(["similarity-only", other])], keys[:2], "arm",
            "similarity-only", other, metric="kept", unit="question", **boot,
        )  # fmt: skip
        rows.append(p.assign(arm=other))
    paired = pd.concat(rows, ignore_index=True)[[*keys, "diff", "lo", "hi", "up", "down"]]
    paired = paired.rename(columns={"lo": "diff_lo", "hi": "diff_hi", "up": "won", "down": "lost"})
    out = kept.merge(paired, on=keys, how="left")
    out[["won", "lost"]] = out[["won", "lost"]].astype("Int64")
    gain = out.pivot_table(index=keys[:2], columns="arm", values="diff", sort=False)
    share = (gain[ARMS[2]] / gain[ARMS[3]].where(gain[ARMS[3]] > 0)).rename("share_of_right_gain")
    out = out.merge(share.reset_index(), on=keys[:2], how="left")
    out.loc[out.arm != ARMS[2], "share_of_right_gain"] = np.nan
    order = {a: i for i, a in enumerate(ARMS)}
    out = out.sort_values(keys, key=lambda s: s.map(order) if s.name == "arm" else s, kind="stable")
    return out.rename(columns={"mean": "kept", "lo": "kept_lo", "hi": "kept_hi"}).reset_index(
        drop=True
    )


def bar(table: pd.DataFrame, multipliers=(16.0, 64.0), share: float = 1 / 3) -> pd.DataFrame:
    """The issue's bar per encoder and M: DSGC over the induced graph wins at least as many
    questions as it loses against similarity-only (at 16 and 64), and gets at least `share` of
    the right graph's gain (at 16)."""
    ind = table[table.arm == ARMS[2]]
    rows = []
    for r in ind.itertuples():
        if r.budget_multiplier not in multipliers:
            continue
        no_harm = r.won >= r.lost
        right = table[(table.arm == ARMS[3]) & (table.encoder == r.encoder)
                      & (table.budget_multiplier == r.budget_multiplier)]["diff"].iloc[0]  # fmt: skip
        enough = r.budget_multiplier != 16.0 or right <= 0 or r.share_of_right_gain >= share
        rows.append((r.encoder, r.budget_multiplier, int(r.won), int(r.lost),
                     r.share_of_right_gain, bool(no_harm and enough)))  # fmt: skip
    return pd.DataFrame(
        rows, columns=["encoder", "budget_multiplier", "won", "lost", "share_of_right_gain", "met"]
    )


def study_text(table: pd.DataFrame) -> str:
    """The table as a person reads it: per encoder and M, each arm's kept share with its interval,
    and each DSGC arm's questions won and lost against similarity-only."""
    out = []
    for (enc, m), g in table.groupby(["encoder", "budget_multiplier"], sort=False):
        cells = []
        for r in g.itertuples():
            cell = f"{r.arm} {stats.fmt_interval(r.kept, r.kept_lo, r.kept_hi)}"
            if r.arm.startswith("DSGC"):
                cell += f" (won {int(r.won)}, lost {int(r.lost)})"
            cells.append(cell)
        out.append(f"{enc}, M {m:g}: " + "; ".join(cells))
    return "\n".join(out)


# --- what notebook 12 shows ---------------------------------------------------------------------


def corpus_table(read: Read) -> pd.DataFrame:
    """Per conversation: its sessions, turns, questions kept and their evidence turns."""
    rows = {}
    for sc in read.scenarios:
        name = sc.metadata["conversation"]
        r = rows.setdefault(name, [len(sc.metadata["session_dates"]), len(sc.blocks), 0, 0])
        r[2] += 1
        r[3] += len(sc.chain)
    return pd.DataFrame(
        [(k, *v) for k, v in rows.items()],
        columns=["conversation", "sessions", "turns", "questions", "evidence turns"],
    )


def example(scenarios, runs: pd.DataFrame, encoder: str, multiplier: float) -> pd.DataFrame:
    """The first question whose evidence similarity-only loses and the right graph keeps at this
    encoder and M: each evidence turn's rank under similarity-only and whether each arm kept it."""
    at = runs[(runs.encoder == encoder) & (runs.budget_multiplier == multiplier)]
    kept = at.pivot_table(index="question", columns="arm", values="kept", sort=False)
    lost = kept[(kept[ARMS[1]] == 0) & (kept[ARMS[3]] == 1)].index
    if not len(lost):
        return pd.DataFrame()
    sc = next(s for s in scenarios if s.id == lost[0])
    enc = get_encoder(encoder)
    ((edges, conf),) = induce_weighted([sc], "mentions")
    graphs = {ARMS[1]: sc, ARMS[2]: sc.with_edges(edges, conf), ARMS[3]: sc}
    pos = sc.index()
    chain = [pos[c] for c in sc.chain]
    rows = {c: {"question": sc.query, "turn": sc.blocks[i].id, "text": sc.texts[i]}
            for c, i in zip(sc.chain, chain, strict=True)}  # fmt: skip
    for arm, g in graphs.items():
        pol = PolicySetting("similarity" if arm == ARMS[1] else "dsgc")
        ret = run(g, enc, pol, multiplier)
        for c, i, rank in zip(sc.chain, chain, ret.rank_of(chain), strict=True):
            if arm == ARMS[1]:
                rows[c]["rank (similarity-only)"] = int(rank)
            rows[c][f"kept: {arm}"] = "yes" if ret.kept[i] else "no"
    out = pd.DataFrame(list(rows.values()))
    out.attrs.update(turns=len(sc.blocks), budget=sc.budget(multiplier))
    return out


def bar_text(bar_table: pd.DataFrame, table: pd.DataFrame) -> str:
    """The bar, in words, from the table: per encoder and M, questions won and lost, and the share
    of the right graph's gain at M 16."""
    parts = []
    for r in bar_table.itertuples():
        t = table[(table.encoder == r.encoder) & (table.budget_multiplier == r.budget_multiplier)]
        kept = t.set_index("arm").kept
        cell = (
            f"{r.encoder}, M {r.budget_multiplier:g}: similarity-only keeps "
            f"{kept[ARMS[1]]:.2f}, DSGC over the induced graph {kept[ARMS[2]]:.2f} "
            f"({r.won} won, {r.lost} lost), over the right graph {kept[ARMS[3]]:.2f}"
        )
        if r.budget_multiplier == 16.0 and not np.isnan(r.share_of_right_gain):
            cell += f", so {r.share_of_right_gain:.2f} of the right graph's gain"
        parts.append(cell + (" (met)" if r.met else " (**missed**)"))
    met = bool(bar_table.met.all())
    head = "The bar is met in every cell" if met else "The bar is missed"
    return f"{head}: " + "; ".join(parts) + "."


def pair_quality(scenarios) -> dict:
    """The induced graph's pairs against the evidence pairs (direction ignored), pooled: pairs a
    question, evidence pairs found, precision and recall."""
    hit = induced = true = 0
    for sc, (edges, _) in zip(scenarios, induce_weighted(scenarios, "mentions"), strict=True):
        s = score_pairs(edges, sc.edges)
        hit, induced, true = hit + s.hit, induced + s.induced, true + s.true
    return {
        "pairs": induced / max(len(scenarios), 1),
        "hit": hit,
        "true": true,
        "precision": hit / induced if induced else float("nan"),
        "recall": hit / true if true else float("nan"),
    }


def recorded_view(records: dict) -> pd.DataFrame:
    """One row per record, encoder and M: similarity-only, DSGC over the induced graph with its
    questions won and lost, the right graph, and the share of its gain the induced graph gets."""
    rows = []
    for name, t in records.items():
        for (enc, m), g in t.groupby(["encoder", "budget_multiplier"], sort=False):
            at = g.set_index("arm")
            ind = at.loc[ARMS[2]]
            rows.append((name, enc, m, at.loc[ARMS[1]].kept, ind.kept, f"{ind.won:.0f} / {ind.lost:.0f}",
                         at.loc[ARMS[3]].kept, ind.share_of_right_gain))  # fmt: skip
    cols = ["record", "encoder", "budget_multiplier", ARMS[1], ARMS[2], "won / lost", ARMS[3]]
    return pd.DataFrame(rows, columns=[*cols, "share of the right graph's gain"])
