"""Readers turn the exposed items into an answer: any callable `reader(query, exposed_texts) -> str`.

`oracle_reader` is deterministic and knows the synthetic template, so on informative queries it
is right exactly when the target was exposed: an upper bound on any reader, not a measurement of
one. `ChatReader` asks an OpenAI-compatible chat endpoint (a local llama.cpp or vLLM server, or
a hosted API) given by URL; nothing in the tests needs one. `answer_accuracy` scores a reader on
grid cells with retention rate and recall beside accuracy (seed 003, section 7).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from workbench.common.encoders import tokenize
from workbench.common.io import atomic_write_text
from workbench.recall.grid import N_BOOT, Grid, bootstrap_ci


class Reader(Protocol):
    """Anything that answers a query from the exposed texts (best-ranked first)."""

    def __call__(self, query: str, exposed_texts: Sequence[str]) -> str: ...


def reader_label(reader) -> str:
    """The name a reader is reported under (its `label` attribute, else its function name)."""
    return str(getattr(reader, "label", None) or getattr(reader, "__name__", type(reader).__name__))


# --- the oracle reader -----------------------------------------------------------------------

_FACT = re.compile(r"^(?:\S+ )?The (\S+) is (.+?)\.?$")
_TEMPLATE = frozenset(tokenize("What is the value ? The is"))  # words every fact or query has


def oracle_reader(query: str, exposed_texts: Sequence[str]) -> str:
    """The value of the exposed fact that names the query's slot; "" (abstain) when none does.

    It reads the synthetic template ("The <slot> is <value>."), so with informative queries and
    unique values per stream it answers correctly exactly when the target was exposed. With the
    uninformative query nothing names a slot, so it abstains. It does not read SQuAD sentences.
    """
    asked = set(tokenize(query)) - _TEMPLATE
    for text in exposed_texts:
        m = _FACT.match(text)
        if m and asked & set(tokenize(m.group(1))):
            return m.group(2)
    return ""


oracle_reader.label = "oracle reader, an upper bound"


# --- exact match, as the SQuAD v1.1 evaluation script scores it ------------------------------

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """Lowercase, drop ASCII punctuation, drop a/an/the, squeeze whitespace (Unicode is kept)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def gold_answers(answer) -> tuple[str, ...]:
    """The normalized golds of one query (a string or several); a gold that normalizes to "" is dropped."""
    many = (answer,) if isinstance(answer, str) else tuple(answer)
    return tuple(dict.fromkeys(g for g in map(normalize_answer, many) if g))


def exact_match(prediction: str, golds: tuple[str, ...]) -> bool:
    """Whether a prediction equals any normalized gold; an empty prediction never matches."""
    p = normalize_answer(prediction)
    return bool(p) and p in golds


# --- scoring a reader on grid cells ----------------------------------------------------------


def exposed_texts(grid: Grid, r: int, s: int, e: int, q: int) -> tuple[str, ...]:
    """The texts one cell exposes for one query, best-ranked first."""
    ep = grid.episodes
    shown = np.flatnonzero(grid.exposed[r, s, e, q])
    shown = shown[np.argsort(grid.rank[r, s, e, q, shown], kind="stable")]
    return tuple(ep.texts[ep.text_id[e, i]] for i in shown)


def answer_accuracy(
    grid: Grid,
    cells: Sequence[tuple[str, str]],
    reader: Callable[[str, Sequence[str]], str] = oracle_reader,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """Per cell: retention rate, recall and exact-match accuracy, each with a 95% episode-bootstrap
    interval (one set of resamples, so the three are paired), accuracy given recall, and answers
    right without recall; plus a no-memory row (the reader sees nothing).

    The reader is called once per distinct (query, exposed texts): cells and queries repeat prompts.
    """
    ep = grid.episodes
    golds = [
        [gold_answers(ep.answers[e, q]) for q in range(ep.n_queries)] for e in range(ep.n_episodes)
    ]
    memo: dict[tuple[str, tuple[str, ...]], str] = {}

    def read(query: str, texts: tuple[str, ...]) -> str:
        if (query, texts) not in memo:
            memo[query, texts] = str(reader(query, list(texts)))
        return memo[query, texts]

    rows = []
    for r_name, s_name in [*cells, ("none", "none")]:
        shape = ep.target.shape
        kept, hit = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
        correct = np.zeros(shape, dtype=bool)
        if r_name != "none":
            r, s = grid.cell(r_name, s_name)
            kept, hit = grid.retained[r], grid.hits[r, s]
        for e in range(ep.n_episodes):
            for q in range(ep.n_queries):
                texts = exposed_texts(grid, r, s, e, q) if r_name != "none" else ()
                answer = read(ep.queries[ep.query_id[e, q]], texts)
                correct[e, q] = exact_match(answer, golds[e][q])
        est, lo, hi = bootstrap_ci(
            np.stack([kept.mean(1), hit.mean(1), correct.mean(1)]), n_boot, grid.seed
        )
        row = {"retention": r_name, "selection": s_name}
        for i, (name, short) in enumerate(
            [("retention_rate", "retention"), ("recall", "recall"), ("accuracy", "accuracy")]
        ):
            row[name], row[f"{short}_lo"], row[f"{short}_hi"] = (
                round(100 * float(v), 1) for v in (est[i], lo[i], hi[i])
            )
        row["accuracy_given_recall"] = (
            round(100 * float(correct[hit].mean()), 1) if hit.any() else float("nan")
        )
        row["correct_without_recall"] = int((correct & ~hit).sum())
        row["reader"] = reader_label(reader)
        rows.append(row)
    return pd.DataFrame(rows)


# --- an OpenAI-compatible chat endpoint ------------------------------------------------------

SYSTEM_PROMPT = (
    "Answer the question using only the facts given. Reply with the answer alone, a few words "
    "at most, with no explanation. If the facts do not contain the answer, reply: unknown"
)


def default_prompt(query: str, exposed: Sequence[str]) -> str:
    """The user message: the exposed texts numbered, best-ranked first, then the question."""
    lines = [f"{i + 1}. {t}" for i, t in enumerate(exposed)] or ["(none)"]
    return "Facts:\n" + "\n".join(lines) + f"\n\nQuestion: {query}\nAnswer:"


class ReaderError(RuntimeError):
    """The endpoint failed after its retries, or answered in an unexpected shape."""


def _http_post(url: str, body: dict, headers: dict, timeout: float) -> dict:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8"))


class ChatReader:
    """A reader that asks `POST {base_url}/chat/completions` (the OpenAI chat format).

    base_url is e.g. "http://127.0.0.1:8080/v1". A bearer key is sent only when the environment
    variable named by api_key_env is set (local servers need none). Decoding is greedy
    (temperature 0). With cache_dir, answers are stored by a hash of (model, system prompt, user
    prompt), so a rerun asks nothing and gives the same table. Errors 408, 429 and 5xx and
    dropped connections are retried; other errors raise ReaderError at once.
    `transport(url, body, headers, timeout) -> dict` replaces the HTTP call.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        system_prompt: str = SYSTEM_PROMPT,
        prompt: Callable[[str, Sequence[str]], str] = default_prompt,
        max_tokens: int = 32,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        cache_dir: str | os.PathLike | None = None,
        transport: Callable[[str, dict, dict, float], dict] = _http_post,
    ):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.system_prompt = system_prompt
        self.prompt = prompt
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.retries = max(1, retries)
        self.backoff = backoff
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.transport = transport
        self.requests = 0  # requests actually sent
        self.label = f"chat reader {model} at {self.url}"

    def _cache_file(self, user: str) -> Path | None:
        if self.cache_dir is None:
            return None
        key = json.dumps([self.model, self.system_prompt, user]).encode("utf-8")
        return self.cache_dir / f"{hashlib.sha256(key).hexdigest()}.json"

    def __call__(self, query: str, exposed_texts: Sequence[str]) -> str:
        user = self.prompt(query, exposed_texts)
        path = self._cache_file(user)
        if path is not None and path.exists():
            return json.loads(path.read_text(encoding="utf-8"))["answer"]
        answer = self._ask(user)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, json.dumps({"model": self.model, "answer": answer}))
        return answer

    def _ask(self, user: str) -> str:
        body = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.system_prompt},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last: Exception | None = None
        for attempt in range(self.retries):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            self.requests += 1
            try:
                out = self.transport(self.url, body, headers, self.timeout)
            except urllib.error.HTTPError as e:
                last = e
                if e.code not in (408, 429) and e.code < 500:
                    break  # a client error does not go away on retry
                continue
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = e
                continue
            try:
                return str(out["choices"][0]["message"]["content"] or "").strip()
            except (KeyError, IndexError, TypeError) as e:
                raise ReaderError(f"{self.url} answered without choices[0].message.content") from e
        raise ReaderError(f"{self.url}: {last}") from last

    def __repr__(self) -> str:
        return f"ChatReader({self.model!r} at {self.url}, cache={self.cache_dir})"
