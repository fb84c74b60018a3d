"""Readers for the recall study: the oracle reader, exact match, answer accuracy, and the
OpenAI-compatible chat reader (a fake transport and a stub server on 127.0.0.1; no network)."""

from __future__ import annotations

import json
import threading
import urllib.error
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pytest

from workbench.common.encoders import get_encoder
from workbench.recall import episodes as E
from workbench.recall import grid as R
from workbench.recall import readers as D
from workbench.recall import squad


@pytest.fixture(scope="module")
def grid(global_seed):
    return R.run_grid(E.make_episodes(120, seed=global_seed), encoder=get_encoder("lexical"))


CELLS = [("recency", "query"), ("recency", "recency"), ("unbounded", "random")]


def test_oracle_reader_reads_the_fact_that_names_the_slot():
    facts = ["The tree is quartz.", "The city is amber."]
    assert D.oracle_reader("What is the city ?", facts) == "amber"
    assert D.oracle_reader("What is the city ?", ["The tree is quartz."]) == ""  # abstains
    assert D.oracle_reader("What is the value?", facts) == ""  # nothing names a slot
    assert D.oracle_reader("What is the city ?", ["[distractor] The city is amber."]) == "amber"


def test_oracle_reader_is_right_exactly_when_the_target_is_exposed(grid):
    """The upper bound: accuracy equals recall query by query, and no answer is right without recall."""
    acc = D.answer_accuracy(grid, CELLS, n_boot=200).set_index(["retention", "selection"])
    for cell in CELLS:
        row = acc.loc[cell]
        assert row.accuracy == row.recall and row.correct_without_recall == 0
        assert row.recall <= row.retention_rate
        assert row.accuracy_lo <= row.accuracy <= row.accuracy_hi
    assert (
        acc.loc[("recency", "query"), "recall"] == acc.loc[("recency", "query"), "retention_rate"]
    )
    assert acc.loc[("none", "none"), ["retention_rate", "recall", "accuracy"]].tolist() == [0, 0, 0]
    assert set(acc["reader"]) == {"oracle reader, an upper bound"}


def test_any_callable_is_a_reader_and_is_asked_once_per_prompt(grid):
    calls = []

    def first_value(query, texts):
        calls.append((query, tuple(texts)))
        return texts[0].rstrip(".").split()[-1] if texts else ""

    acc = D.answer_accuracy(grid, CELLS, first_value, n_boot=200).set_index("retention")
    assert len(calls) == len(set(calls))  # memoized
    assert (acc["reader"] == "first_value").all()
    # a reader that takes the top-ranked value is wrong whenever the target is not ranked first
    r = acc.loc["unbounded"]
    assert 0 < r.accuracy < r.recall
    wrong = D.answer_accuracy(grid, CELLS[:1], lambda q, t: "nope", n_boot=200)
    assert wrong["accuracy"].max() == 0.0


def test_exact_match_follows_the_squad_script():
    assert D.normalize_answer("The  Málaga!") == "málaga"
    assert D.normalize_answer("1,000") == "1000" and D.normalize_answer("€") == "€"
    golds = D.gold_answers(["an apple", "", "the", "Apple"])
    assert golds == ("apple",)  # empty golds dropped, duplicates merged
    assert D.exact_match("APPLE.", golds) and not D.exact_match("", golds)
    assert not D.exact_match("", D.gold_answers("the"))  # an empty gold is never matched


def test_squad_answers_score_against_every_gold(global_seed):
    pool = squad.load_squad(Path(__file__).parents[1] / "fixtures" / "squad_v11_structure.json")
    ep = squad.squad_episodes(pool, 30, seed=global_seed)
    g = R.run_grid(ep, encoder=get_encoder("lexical"))
    golds = {t.question: t.golds for t in pool.targets}

    def last_gold(query, texts):  # the last annotator's answer among those it can see
        seen = [g for g in golds[query] if any(g in t for t in texts)]
        return seen[-1] if seen else ""

    acc = D.answer_accuracy(g, [("unbounded", "oracle")], last_gold, n_boot=100)
    assert acc.iloc[0]["accuracy"] == 100.0  # any annotator's answer counts
    assert any(len(t.golds) > 1 for t in pool.targets)


# --- the chat reader -------------------------------------------------------------------------


def test_chat_reader_with_a_fake_transport(tmp_path):
    sent = []

    def fake(url, body, headers, timeout):
        sent.append((url, body, headers))
        return {"choices": [{"message": {"content": " amber \n"}}]}

    r = D.ChatReader(
        "http://127.0.0.1:9/v1/", "tiny", api_key_env=None, cache_dir=tmp_path, transport=fake
    )
    assert r("What is the city ?", ["The city is amber."]) == "amber"
    assert r("What is the city ?", ["The city is amber."]) == "amber"  # from the disk cache
    assert r.requests == 1 and sent[0][0] == "http://127.0.0.1:9/v1/chat/completions"
    body = sent[0][1]
    assert body["temperature"] == 0 and body["model"] == "tiny"
    assert "1. The city is amber." in body["messages"][1]["content"]
    assert "Authorization" not in sent[0][2]
    bad = D.ChatReader("http://x/v1", "m", api_key_env=None, transport=lambda *a: {"oops": 1})
    with pytest.raises(D.ReaderError, match="choices"):
        bad("q", [])


def test_chat_reader_retries_server_errors_but_not_client_errors(monkeypatch):
    monkeypatch.setenv("WB_TEST_KEY", "secret")
    codes = [503, 200]

    def flaky(url, body, headers, timeout):
        assert headers["Authorization"] == "Bearer secret"
        code = codes.pop(0)
        if code != 200:
            raise urllib.error.HTTPError(url, code, "busy", {}, None)
        return {"choices": [{"message": {"content": "ok"}}]}

    r = D.ChatReader("http://x/v1", "m", api_key_env="WB_TEST_KEY", backoff=0, transport=flaky)
    assert r("q", []) == "ok" and r.requests == 2

    def refused(url, body, headers, timeout):
        raise urllib.error.HTTPError(url, 401, "unauthorized", {}, None)

    r = D.ChatReader("http://x/v1", "m", retries=5, backoff=0, transport=refused)
    with pytest.raises(D.ReaderError, match="401"):
        r("q", [])
    assert r.requests == 1


class _Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that answers with the value of the fact naming the slot."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = body["messages"][1]["content"]
        facts = [line.split(". ", 1)[1] for line in user.splitlines() if line[:1].isdigit()]
        question = user.split("Question: ", 1)[1].split("\n")[0]
        answer = D.oracle_reader(question, facts) or "unknown"
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]})
        self.send_response(200 if self.path == "/v1/chat/completions" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def stub_server():
    server = HTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_chat_reader_against_a_local_stub_server(stub_server, global_seed):
    reader = D.ChatReader(stub_server, "stub", api_key_env=None, timeout=10)
    ep = E.make_episodes(15, seed=global_seed)
    g = R.run_grid(ep, retention_rules=("recency",), selection_rules=("query", "recency"))
    acc = D.answer_accuracy(g, [("recency", "query"), ("recency", "recency")], reader, n_boot=100)
    oracle = D.answer_accuracy(g, [("recency", "query"), ("recency", "recency")], n_boot=100)
    cols = ["retention_rate", "recall", "accuracy"]
    assert np.array_equal(acc[cols].to_numpy(), oracle[cols].to_numpy())  # "unknown" never matches
    assert acc["reader"].iloc[0].startswith("chat reader stub at http://127.0.0.1:")
    assert 0 < reader.requests <= 15 * 2 * 2 + 2


def test_cli_accuracy_with_a_reader_url(stub_server, tmp_path):
    import csv

    from workbench.cli import main

    out = tmp_path / "acc"
    rc = main(
        ["recall", "accuracy", "--episodes", "10", "--boot", "100", "--dense-encoder", "lexical"]
        + ["--reader-url", stub_server, "--reader-model", "stub", "--out", str(out)]
    )
    assert rc == 0
    rows = list(csv.DictReader((out / "recall_accuracy.csv").open()))
    assert {r["source"] for r in rows} == {"synthetic"}
    assert rows[0]["reader"].startswith("chat reader stub")
    assert float(rows[0]["accuracy"]) == float(rows[0]["recall"])
