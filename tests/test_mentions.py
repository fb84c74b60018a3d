"""The mention inducer: mentions in any style, links weighted by rarity, directed by mention
order, confidence-weighted support (the all-ones case is the paper's lambda * pi to the bit), and
its edges on text the generator did not write (data/handwritten/, a tier it was tuned on)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from workbench.beyond.induce import induce_weighted, score_pairs
from workbench.beyond.mentions import (
    _distinct,
    link_pairs,
    mention_links,
    mentions,
    spell_numbers,
)
from workbench.cli import main
from workbench.common.encoders import get_encoder
from workbench.dsgc import batch
from workbench.dsgc.generator import generate, worked_example
from workbench.dsgc.policies import DSGC
from workbench.dsgc.scenario import Scenario, ScenarioError, load_scenarios
from workbench.dsgc.trace import run

ROOT = Path(__file__).resolve().parents[1]
HANDWRITTEN = ROOT / "data" / "handwritten" / "scenarios.jsonl"


@pytest.mark.parametrize(
    "a,b",
    [
        ("pager group PG-77", "anyone in pg77"),
        ("box msku-449120", "container MSKU 449120"),
        ("flag FF_LOGIN_V2 is off", "while ff-login-v2 stays off"),
        ("order #77-3019 arrived", "order 773019 was due"),
        ("manifest number seven three one", "Manifest 731 is parked"),
        ("lab two fourteen", "Lab 214"),
        ("costs $4,500", "4500 dollars"),
        ("badge B-12", "badge B12"),
        ("moved onto unit three", "Unit 3 works"),  # a numbered thing, in words and in digits
        ("follows loading sheet LS-88", "Loading sheet 88 forbids"),  # a code's number, bare
        ("aircraft G-LRKB", "G-LRKB was moved"),  # a code of capital letters only
    ],
)
def test_one_mention_in_two_styles(a, b):
    assert mentions(a) & mentions(b), (sorted(mentions(a)), sorted(mentions(b)))


@pytest.mark.parametrize(
    "a,b",
    [
        ("clearance level V6", "Parking level six"),  # the same word and number, other things
        ("Unit 2 wraps", "unit three"),
        ("reads 1.9 metres", "reads metres"),  # no term across a number
        ("schedule S/450", "plan S"),  # no letter code out of 'S/450'
    ],
)
def test_near_misses_share_no_mention(a, b):
    assert not (mentions(a) & mentions(b)), sorted(mentions(a) & mentions(b))


def test_what_numbers_measure_links_a_value_to_its_limit_only_about_the_subject():
    """'412 tickets' and '400 tickets' share what they count; that counts only between blocks
    that also name the query's subject (other things' readings share the unit too)."""
    assert "dim:ticket" in mentions("has sold 412 tickets") & mentions(
        "once sales pass 400 tickets"
    )
    assert "dim:read" not in mentions("Gallery 6 read 58 percent")  # a verb, not a unit
    subject = frozenset({"name:lantern"})
    assert _distinct(["dim:ticket", "name:lantern"], subject) == ["dim:ticket", "name:lantern"]
    assert _distinct(["dim:ticket", "term:sold out"], subject) == ["term:sold out"]
    assert _distinct(["code:ls88", "code:loading sheet#88"], subject) == ["code:ls88"]
    fill = [f"Note {k} about the canteen menu this week." for k in range(16)]
    texts = [
        "The Lantern Theatre has sold 412 tickets for Saturday.",
        "The Lantern Theatre opens its balcony once sales pass 400 tickets.",
        "The Regent Theatre has sold 380 tickets.",
        "Ticket news from the Lantern Theatre bar.",
        *fill,
    ]
    query = "Has the Lantern Theatre sold enough tickets to open the balcony?"
    pairs = {(a, b) for a, b, _, _ in link_pairs(texts, query)}
    assert (0, 1) in pairs and (0, 2) not in pairs and (1, 2) not in pairs


def test_words_that_are_not_mentions():
    assert spell_numbers("forty-seven boxes, five hundred twelve") == "47 boxes, 512"
    assert spell_numbers("one of them") == "one of them"  # 'one' alone is a word
    assert not {m for m in mentions("We meet on Monday in March.") if m.startswith("name:")}
    assert not mentions("it is 45 at 10")  # no code of a word and a number
    # a pair of words of which one is of time dates a block, it names nothing (tier C's
    # `club-grant`: 'last year' linked a distractor to a filler); a content pair still counts
    terms = {m for m in mentions("The fete raised more than last year; next week the rowing boat")}
    assert "term:rowing boat" in terms and not {t for t in terms if "year" in t or "week" in t}


def test_the_worked_example_is_read_as_the_paper_draws_it():
    """Section 2.2: Alice -> bundle M -> clearance N. The two true edges come out, directed."""
    sc = worked_example()
    got = {
        (sc.ids[x.dependent], sc.ids[x.prerequisite])
        for x in mention_links(list(sc.texts), sc.query)
    }
    assert set(sc.edges) <= got


def test_rare_mentions_link_and_common_ones_do_not():
    texts = [f"Block {i} mentions code K-{i:03d} and the shared team Harbor." for i in range(12)]
    texts[3] += " It also names relay R-9."
    texts[7] += " Relay r9 is next."
    pairs = link_pairs(texts, "What about relay R9?")
    assert [(a, b) for a, b, _, _ in pairs] == [(3, 7)]  # Harbor is in every block: no link


def test_all_ones_confidence_is_the_papers_score_to_the_bit():
    enc = get_encoder("lexical")
    for t in ("role", "profile", "expense"):
        sc = generate(t, 3)
        ones = sc.with_edges(sc.edges, [1.0] * len(sc.edges))
        a, b = run(sc, enc, DSGC(hops=2)), run(ones, enc, DSGC(hops=2))
        assert a.scores.tobytes() == b.scores.tobytes() and np.array_equal(a.kept, b.kept)
        half = run(sc.with_edges(sc.edges, [0.5] * len(sc.edges)), enc, DSGC())
        assert half.pi.sum() < run(sc, enc, DSGC()).pi.sum()  # the weights are used
    scs = [generate("profile", s) for s in range(6)]
    (packed,) = batch.pack(scs, enc)
    plain = batch.evaluate(packed, [batch.PolicySetting("dsgc", 1.0, 2, 0.5)])
    ones = batch.evaluate(
        packed,
        [batch.PolicySetting("dsgc", 1.0, 2, 0.5)],
        None,
        [[1.0] * len(s.edges) for s in scs],
    )
    assert plain.equals(ones)


def test_edge_confidence_is_checked_naming_the_field(tmp_path):
    d = generate("role", 0).to_dict()
    for conf, field in (([0.5], "edge_confidence"), ([0.5, 1.5], "edge_confidence[1]")):
        p = tmp_path / "s.jsonl"
        p.write_text(json.dumps({**d, "edge_confidence": conf}) + "\n")
        with pytest.raises(ScenarioError, match=rf"field '{re.escape(field)}'"):
            load_scenarios(p)
    ok = Scenario.from_dict({**d, "edge_confidence": [0.5, 1.0]})
    assert ok.confidence == (0.5, 1.0) and ok.edge_index().shape == (2, 3)


def test_induce_by_default_reads_mentions_and_reports(tmp_path, capsys):
    src = tmp_path / "role.jsonl"
    main(["generate", "role", "--seeds", "0:3", "--out", str(src)])
    out = tmp_path / "out.jsonl"
    assert main(["induce", str(src), "--out", str(out), "--report"]) == 0
    text = capsys.readouterr().out
    assert "(mentions)" in text and "as pairs precision 1.00, recall 1.00" in text
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(len(r["edge_confidence"]) == len(r["edges"]) for r in rows)
    assert rows[0]["induced"]["method"] == "mentions" and "given_edges" in rows[0]


def test_the_hand_written_tier():
    """On the hand-written scenarios (edges stripped; a tier the inducer was tuned on, see
    data/handwritten/README.md): the issue's bar on edges as pairs, and the generator's own
    handle rules find nothing there."""
    scs = load_scenarios(HANDWRITTEN)
    found = induce_weighted(scs, "mentions")
    s = [score_pairs(es, sc.edges) for sc, (es, _) in zip(scs, found, strict=True)]
    hit, ind, true = (sum(getattr(x, f) for x in s) for f in ("hit", "induced", "true"))
    assert hit / ind >= 0.6 and hit / true >= 0.8, (hit, ind, true)
    assert all(not es for es, _ in induce_weighted(scs, "handles"))


def test_an_opaque_id_links_two_blocks_the_query_does_not_reach():
    """A log's task names none of the ids its tools hand back: a pair sharing an opaque id
    (letters and digits, six or more) is kept though nothing links it to the query, and a pair
    sharing only a short code is not (it still needs the query's reach)."""
    query = "Please train the churn model on the cleaned customer table."
    texts = [
        "submit_job(task='train churn model')",
        '{"id": "job_ef6c6b8", "status": "queued"}',
        "get_job(job_id='job_ef6c6b8')",
        "Unit K-42 was moved to the east dock.",
        "Dock report: K-42 holds crates of tiles.",
    ]
    pairs = {(a, b) for a, b, _, _ in link_pairs(texts, query)}
    assert (1, 2) in pairs  # the id the result defines and the call uses
    assert (3, 4) not in pairs  # a short code, unreachable from the query
