"""The explorer's and the workshop's kernel side, without a browser: the rows a page is sent, the
URL state, uploads, inactive controls, the loading path, the workshop's reveals and score, and the
generated static files (tests/explore/test_browser.py drives the same code in Chromium)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path

import pytest

from workbench.cli import main as cli
from workbench.dsgc.generator import generate
from workbench.dsgc.scenario import ScenarioError, save_scenarios
from workbench.dsgc.trace import Setting, run_setting
from workbench.explore import explorer as ex
from workbench.explore import widgets
from workbench.explore.lessons import NONE, neutral_ids
from workbench.explore.workshop import Workshop

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = [
    Setting(),
    Setting(template="role", seed=3, total_blocks=50, lam=0.5, hops=2),
    Setting(template="expense", seed=1, policy="similarity"),
    Setting(template="threshold", seed=2, policy="recency", multiplier=3.0),
    Setting(template="worked", policy="no-graph", tau=0.1),
]


@pytest.mark.parametrize("s", SETTINGS, ids=lambda s: f"{s.template}-{s.policy}")
def test_the_page_table_is_the_library_table(s):
    """The page's table and the export's frame are one table: the frame's values, at the page's
    fixed places, are the page's strings, in the trace's ranking order."""
    t = run_setting(s)
    rows, frame = ex.table_rows(t), ex.ranking_table(t)
    assert rows[0] == list(frame.columns)
    fmt = {c: (lambda v, d=d: f"{v:.{d}f}") for c, d in ex.FLOATS.items()}
    assert rows[1:] == [
        [fmt.get(c, str)(v) for c, v in r.items()] for r in frame.to_dict("records")
    ]
    assert frame["id"].tolist() == t.ranking and frame["text"].tolist() == [
        t.scenario.block(i).text for i in t.ranking
    ]


def test_payload_carries_the_library_verdict_and_the_valley_pair():
    s = SETTINGS[1]
    p = ex.payload(s, seq=7)
    t = run_setting(s)
    assert p["seq"] == 7 and p["verdict"] == ex.verdict_line(t)
    assert p["land"]["ids"] == t.ranking and len(p["land"]["land"]) == 2 * 50  # r and λ·π
    assert [r["block"] for r in p["valley"]["valley"]] == [*t.scenario.chain] * 2
    json.dumps(p)  # one widget message: JSON all the way down


def test_query_round_trip_and_bad_values_reported():
    s = Setting(template="role", seed=7, encoder="sentence", policy="no-graph", multiplier=2.5,
                lam=0.75, tau=0.3, hops=2, total_blocks=50)  # fmt: skip
    q = ex.to_query(s)
    assert "template=" not in q and "theme=" not in q  # the template travels as tpl
    assert ex.from_query(q, Setting()) == (s, [])
    got, problems = ex.from_query("seed=500&tpl=nope&lambda=x&hops=2&voila-x=1", Setting())
    assert got == Setting(hops=2)
    assert [p.split("=")[0] for p in problems] == ["link: seed", "link: tpl", "link: lambda"]


def test_inactive_controls_say_why():
    assert set(ex.inactive(Setting(policy="similarity"))) == {"lam", "tau", "hops"}
    assert set(ex.inactive(Setting(policy="recency"))) == {"lam", "tau", "hops"}
    assert set(ex.inactive(Setting(policy="no-graph"))) == {"lam", "hops"}
    assert ex.inactive(Setting()) == {}
    assert set(ex.inactive(Setting(template="worked"))) == {"seed", "total_blocks"}
    assert set(ex.inactive(Setting(), from_file=True)) == {"total_blocks"}
    # and they really are inactive: moving them changes no ranking
    for policy, knobs in (("similarity", {"lam": 2.0, "tau": 0.5, "hops": 3}),
                          ("no-graph", {"lam": 2.0, "hops": 3})):  # fmt: skip
        s = Setting(template="role", seed=4, policy=policy)
        assert run_setting(s).ranking == run_setting(s, **knobs).ranking


def test_upload_errors_are_the_cli_errors(tmp_path, capsys, monkeypatch):
    good = tmp_path / "mine.jsonl"
    save_scenarios([generate("role", 1), generate("profile", 2)], good)
    assert [s.id for s in ex.read_upload("mine.jsonl", good.read_text())] == [
        "role/seed=1/blocks=20",
        "profile/seed=2/blocks=20",
    ]
    lines = good.read_text().splitlines()
    monkeypatch.chdir(tmp_path)
    for name, text in (
        ("dup.jsonl", lines[0] + "\n" + lines[0] + "\n"),
        ("chain.jsonl", lines[1].replace('"chain": ["c1"', '"chain": ["zz"') + "\n"),
        ("json.jsonl", lines[0] + "\n{oops\n"),
    ):
        Path(name).write_text(text)
        with pytest.raises(ScenarioError) as e:
            ex.read_upload(name, text)
        assert str(e.value).startswith(f"{name}: line")
        assert cli(["evaluate", name, "--out", "o.jsonl"]) == 2
        assert str(e.value) in capsys.readouterr().err
    with pytest.raises(ScenarioError, match="empty.jsonl: the file holds no records"):
        ex.read_upload("empty.jsonl", "\n")


def test_the_explorer_warns_for_what_the_lexical_encoder_and_dsgc_cannot_see(tmp_path):
    """the same warnings as `workbench evaluate` (one rule, dsgc.unseen), under the
    verdict: a query in a script the lexical encoder reads nothing of, DSGC without edges."""
    sc = generate("role", 3)
    blind = replace(sc.with_edges(()), query="Кто может удалить копию?")
    path = tmp_path / "ru.jsonl"
    save_scenarios([blind], path)
    up = ex.Upload("ru.jsonl", tuple(ex.read_upload("ru.jsonl", path.read_text())))
    warn = ex.payload(Setting(policy="dsgc"), up)["warnings"]
    assert any("reads no word of the query" in w for w in warn)
    assert any("run `workbench induce` first" in w for w in warn)
    assert ex.payload(Setting(policy="dsgc"))["warnings"] == []  # a generated seed: nothing to say
    assert not any("induce" in w for w in ex.payload(Setting(policy="similarity"), up)["warnings"])


def message(view, **content):
    view._on_msg(view, content, [])


def test_widget_messages_change_the_state_and_answer_each_request(tmp_path):
    view = ex.Explorer(Setting(), warm=False)
    assert view.ready and view.payload["verdict"] == ex.payload(Setting())["verdict"]
    message(view, type="set", changes={"seed": 5, "policy": "similarity"}, seq=1)
    s = Setting(seed=5, policy="similarity")
    assert view.payload["seq"] == 1 and view.payload["verdict"] == ex.payload(s)["verdict"]
    message(view, type="set", changes={"lam": 9.0}, seq=2)  # out of range: error, view kept
    assert "lam must be in" in view.error and view.setting == s and view.payload["seq"] == 2
    f = tmp_path / "two.jsonl"
    save_scenarios([generate("role", 1), generate("expense", 2)], f)
    message(view, type="upload", name="two.jsonl", text=f.read_text(), seq=3)
    assert view.error == "" and view.payload["state"]["template"] == "file:two.jsonl"
    message(view, type="set", changes={"scenario": 1}, seq=4)
    assert (
        view.payload["scenario_id"] == "expense/seed=2/blocks=20" and view.payload["query"] is None
    )
    message(view, type="set", changes={"template": "role"}, seq=5)
    assert view.upload is None and view.payload["scenario_id"] == "role/seed=5/blocks=20"
    sent = []
    view.send = sent.append
    message(view, type="export", what="csv", seq=6)
    message(view, type="export", what="json", seq=7)
    assert sent[0]["text"].splitlines()[0] == ",".join(ex.COLUMNS)
    assert json.loads(sent[1]["text"])["query"] == ex.to_query(view.setting)


def test_each_change_runs_each_setting_it_shows_once(monkeypatch):
    """A change shows the setting's run and the valley's two (no propagation, DSGC): each
    distinct run is made once, the setting's own standing in for the valley run it is; an
    export makes none (it saves the view on the page)."""
    import workbench.dsgc.trace as trace

    runs = []
    real = trace.run

    def counted(scenario, encoder, policy, multiplier=2.0):
        runs.append((scenario.id, repr(policy)))
        return real(scenario, encoder, policy, multiplier)

    monkeypatch.setattr(trace, "run", counted)
    view = ex.Explorer(Setting(policy="dsgc"), warm=False)
    assert len(runs) == len(set(runs)) == 2  # dsgc (also the valley's after) + no-graph
    for changes, want in (
        ({"seed": 4}, 2),
        ({"policy": "similarity"}, 3),  # similarity, then the valley's no-graph and dsgc
        ({"policy": "no-graph", "lam": 0.5}, 2),
        ({"hops": 2}, 2),
    ):
        runs.clear()
        message(view, type="set", changes=changes, seq=1)
        assert view.error == "" and len(runs) == len(set(runs)) == want, (changes, runs)
    runs.clear()
    view.send = lambda _msg: None
    message(view, type="export", what="csv", seq=2)
    message(view, type="export", what="json", seq=3)
    assert runs == []


def test_a_view_that_needs_the_model_waits_with_controls_disabled(monkeypatch, tmp_path):
    """No model load in this test: the warm-up is replaced, then reports a failure."""
    # A cache directory of its own gives a fresh, unloaded encoder even when an earlier test in
    # this process loaded the sentence model.
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    started = []
    monkeypatch.setattr(ex.WARMUP, "start", started.append)
    s = Setting(template="role", seed=61, encoder="sentence")
    assert ex.needs_model(s)  # a fresh embedding cache (conftest) and no model loaded
    view = ex.Explorer(s, warm=False)
    assert not view.ready and view.busy and view.message == ex.LOADING and not view.payload
    assert started == [view._warmed]
    view._warmed("the sentence model could not be loaded: (test)")
    assert view.ready and not view.busy and view.setting.encoder == "lexical"
    assert "could not be loaded" in view.message


def test_the_copied_link_in_jupyterlab_is_the_rooms_address():
    """In JupyterLab "copy link" hands out the explorer page `make app` serves on this machine
    (its default port), never a notebook renderer's address; the sliders' ranges come from the
    one table the server checks against."""
    from workbench.common.options import SLIDERS

    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    assert f"--port $(or $(PORT),{ex.ROOM_PORT})" in makefile  # `make app` serves there
    view = ex.explorer(Setting(), warm=False)
    assert view.link_base == f"http://127.0.0.1:{ex.ROOM_PORT}/explorer" and not view.follow
    js = widgets.static_text("view.js")
    assert "voila" not in js.lower() and "link_base" in js
    shown = view.payload["controls"]
    for k, (_, lo, hi, step) in SLIDERS.items():
        assert (shown[k]["min"], shown[k]["max"], shown[k]["step"]) == (lo, hi, step)


def test_static_files_are_current():
    """specs.json is charts.live_specs() (scripts/build_static.py), and the vendored vega bundle
    names the vl-convert that made it: rebuild it (--vega) when that pin moves."""
    from workbench.dsgc.charts import live_specs

    assert json.loads(widgets.static_text("specs.json")) == json.loads(json.dumps(live_specs()))
    head = widgets.static_text("vega-bundle.js").splitlines()[0]
    assert f"vl-convert-python {version('vl-convert-python')} " in head
    assert "export{" in widgets.static_text("vega-bundle.js")[-300:].replace(" ", "")


# --- the workshop ----------------------------------------------------------------------------


def test_neutral_ids_hide_kinds_and_are_stable():
    sc = generate("role", 0)
    names = neutral_ids(sc)
    assert sorted(names.values()) == [f"B{k:02d}" for k in range(1, 21)]
    assert names == neutral_ids(generate("role", 0))
    order = [b.id for b in sorted(sc.blocks, key=lambda b: names[b.id])]
    assert order != sc.ids  # not the store order either


def test_workshop_questions_hold_no_answer_and_reveals_score():
    ws = Workshop()
    assert len(ws.PARTS) >= 12  # a workshop that fills ninety minutes
    for key in ws.PARTS:  # no question names a block's real id, and each says what it asks
        q = ws.question(key)
        assert not re.search(r"\b[chf]\d+\b", q.html) and q.ask.startswith("Predict"), key
    evict, lam = ws.part(2), ws.part(6)
    question = evict.children[0].value
    assert "evicted" not in question
    assert evict.answer.children == () and "Score: 0 of 0" in ws.score.value
    sim = run_setting(ws.state, policy="similarity")
    evict.predict.value = neutral_ids(sim.scenario)[sim.displaced[0]]
    evict.button.click()
    assert "Right!" in evict.compare.value and evict.predict.disabled and evict.answer.children
    assert "Discuss:" in evict.answer.children[-1].value  # every reveal ends on the room's question
    lam.predict.value = NONE  # wrong: some lambda in the list rescues this seed
    lam.button.click()
    assert "Not this time" in lam.compare.value
    assert "Score: 1 of 2 predictions right" in ws.score.value
    hop = ws.part(9)
    hop.predict.value = hop.predict.options[1][1]  # picked, not revealed
    kept = ws.memory.state  # what the page writes to localStorage
    assert kept["2"]["revealed"] and kept["6"]["revealed"] and not kept["9"]["revealed"]

    again = Workshop()  # a reload: a new kernel, the page sends back what it kept
    parts = {n: again.part(n) for n in (2, 6, 9, 11)}
    assert "Score: 0 of 0" in again.score.value
    again.memory.restored = json.loads(json.dumps(kept))
    assert "Score: 1 of 2 predictions right" in again.score.value
    assert parts[2].predict.disabled and parts[2].predict.value == evict.predict.value
    assert parts[9].predict.value == hop.predict.value and not parts[9].predict.disabled
    assert not parts[11].revealed and parts[2].compare.value == evict.compare.value
    assert kept == {"2": kept["2"], "6": kept["6"], "9": {"choice": 0, "revealed": False}}
    again.memory.restored = {"99": {"revealed": True}, "11": "junk", "9": {"choice": 99}}
    assert not parts[11].revealed and parts[9].predict.value == hop.predict.value  # ignored
    again.memory.restored = {"9": {"choice": True}, "11": {"choice": "1", "revealed": True}}
    assert not parts[11].revealed and parts[9].predict.value == hop.predict.value  # ignored


def test_every_answer_is_one_of_its_choices_computed_from_the_runs():
    """Each part's right prediction is among its choices, and the counting parts count what the
    reference engine keeps, seed by seed (no answer is written in)."""
    from workbench.explore.lessons import kept as chain_kept

    ws = Workshop()
    for key in ws.PARTS:
        values = [v for _, v in ws.question(key).choices]
        right = ws.answer(key).value
        right = right if isinstance(right, list) else [right]
        assert right and all(r in values for r in right), (key, right, values)
    sims = sum(chain_kept(ws.state.with_(seed=s), policy="similarity") for s in range(15))
    assert ws.answer("4").said.endswith(f"in {sims} of 15 seeds")
    lost = sum(not chain_kept(ws.hop_state.with_(seed=s, total_blocks=50)) for s in range(15))
    assert ws.answer("13").said.startswith(f"one hop loses the chain in {lost} of 15 seeds")


def test_the_widgets_and_the_room_share_one_workshop_session():
    """The notebook's widgets hold no state of their own: a reveal is the session's, so the
    message the room would send for it is the one the widgets drew from, and what the widgets keep
    for a reload is what the room page keeps (the same {choice, revealed} shape)."""
    from workbench.explore.lessons import WorkshopSession

    ws = Workshop()
    p1 = ws.part(1)
    p1.predict.value = p1.question.choices[0][1]
    p1.button.click()
    room = WorkshopSession(Workshop())
    msg = room.reveal("1", 0)
    assert ws.session.revealed["1"] == msg and p1.compare.value == msg["compare"]
    assert ws.score.value == room.score()["html"]
    assert ws.memory.state["1"] == {"choice": 0, "revealed": True}
    assert [m["part"] for m in room.restore(ws.memory.state)] == ["1"]


# --- the messages a page and the workbench exchange ---------------------------------------------


def test_one_table_reads_every_message_and_refuses_what_it_does_not_know():
    from workbench.explore import messages as M

    assert M.read({"type": "set", "changes": {"lam": 1}}) == (
        "set",
        {"changes": {"lam": 1}, "seq": 0},
    )
    assert M.read({"type": "reveal", "part": "2"}) == ("reveal", {"part": "2", "choice": None})
    assert M.read({"type": "predict", "part": "2", "choice": 1}) == (
        "predict",
        {"part": "2", "choice": 1},
    )
    every = tuple(M.INBOUND)
    bad = [
        ([], every, "a JSON object"),
        ({"type": "nope"}, every, "unknown message type 'nope'"),
        ({"type": "set"}, every, "field 'changes' is missing"),
        ({"type": "set", "changes": [], "seq": 1}, every, "field 'changes' must be an object"),
        ({"type": "reveal", "part": "1", "choice": True}, every, "must be an integer or null"),
        ({"type": "export", "what": "csv", "extra": 1}, every, "unknown field 'extra'"),
        ({"type": "hello", "query": ""}, M.EXPLORER, "unknown message type 'hello'"),
    ]
    for msg, allowed, says in bad:
        with pytest.raises(ValueError, match=re.escape(says)):
            M.read(msg, allowed)


def test_the_pages_send_and_handle_exactly_the_tables_messages():
    """Every message the front ends send is in the table, with only fields it names; every
    message a room page is sent (but `full`, which the page reads as the close code) is one it
    handles, and the server sends no type the table does not name."""
    from workbench.explore import messages as M

    static = ROOT / "workbench" / "explore" / "static"
    sent = {}
    for js in ("view.js", "room.js"):
        text = (static / js).read_text()
        for m in re.finditer(r'\{ type: "([\w-]+)"', text):
            fields, depth, item = set(), 0, ""
            for ch in text[m.start() + 1 :]:  # the literal's top-level keys, to its closing brace
                depth += ch in "([{"
                depth -= ch in ")]}"
                if depth < 0 or (depth == 0 and ch == ","):
                    fields.add(item.split(":")[0].strip())
                    item = ""
                    if depth < 0:
                        break
                elif depth >= 0:
                    item += ch if depth == 0 else ""
            sent.setdefault(m.group(1), set()).update(fields - {"type"})
    assert set(sent) == set(M.INBOUND), sent
    for kind, fields in sent.items():
        assert fields <= set(M.INBOUND[kind]), (kind, fields)
    handled = set(re.findall(r'msg\.type === "([\w-]+)"', (static / "room.js").read_text()))
    assert handled == set(M.OUTBOUND) - {"full"}
    server = "".join(
        (ROOT / "workbench" / "explore" / f).read_text()
        for f in ("server.py", "sessions.py", "lessons.py")
    )
    assert set(re.findall(r'\{"type": "([\w-]+)"', server)) <= set(M.OUTBOUND)
    # every code a page's socket is closed with, but a flood's, is one room.js says something for
    from workbench.explore.server import CLOSED

    room_js = (static / "room.js").read_text()
    for why, code in CLOSED.items():
        assert (str(code) in room_js) == (why != "flood"), (why, code)


def test_the_valley_says_which_two_runs_it_draws():
    """The valley compares lambda 0 with DSGC at the setting's knobs whatever the policy control
    says; when the policy chosen is neither run, its subtitle says so."""
    for policy, named in (("similarity", True), ("recency", True), ("dsgc", False),
                          ("no-graph", False)):  # fmt: skip
        s = Setting("profile", 0, "lexical", policy, 2.0, 1.5, 0.25, 2, 20)
        sub = ex.payload(s)["valley"]["sub"]
        assert sub[0] == "before: λ = 0; after: DSGC at λ = 1.5, τ = 0.25, 2 hops", sub
        assert ("is neither run" in " ".join(sub)) == named, (policy, sub)
