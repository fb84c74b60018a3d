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
    TWO_WAY,
    distinct_names,
    link_pairs,
    mention_links,
    mentions,
    spell_numbers,
)
from workbench.cli import main
from workbench.common.encoders import get_encoder
from workbench.dsgc import batch
from workbench.dsgc.generator import generate, worked_example
from workbench.dsgc.policies import PolicySetting
from workbench.dsgc.scenario import Scenario, ScenarioError, load_scenarios
from workbench.dsgc.trace import run

ROOT = Path(__file__).resolve().parents[2]
HANDWRITTEN = ROOT / "data" / "handwritten" / "scenarios.jsonl"
FILL = [f"Note {k} about the canteen menu this week." for k in range(16)]  # a store around them


def linked(texts: list[str], query: str) -> set[tuple[int, int]]:
    """The pairs the inducer links among `texts` (first in a store of sixteen fillers)."""
    return {(a, b) for a, b, _, _ in link_pairs([*texts, *FILL], query)}


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
    assert distinct_names(["dim:ticket", "name:lantern"], subject) == ["dim:ticket", "name:lantern"]
    assert distinct_names(["dim:ticket", "term:sold out"], subject) == ["term:sold out"]
    assert distinct_names(["code:ls88", "code:loading sheet#88"], subject) == ["code:ls88"]
    texts = [
        "The Lantern Theatre has sold 412 tickets for Saturday.",
        "The Lantern Theatre opens its balcony once sales pass 400 tickets.",
        "The Regent Theatre has sold 380 tickets.",
        "Ticket news from the Lantern Theatre bar.",
    ]
    pairs = linked(texts, "Has the Lantern Theatre sold enough tickets to open the balcony?")
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
        a, b = (
            run(sc, enc, PolicySetting("dsgc", hops=2)),
            run(ones, enc, PolicySetting("dsgc", hops=2)),
        )
        assert a.scores.tobytes() == b.scores.tobytes() and np.array_equal(a.kept, b.kept)
        half = run(sc.with_edges(sc.edges, [0.5] * len(sc.edges)), enc, PolicySetting())
        assert half.pi.sum() < run(sc, enc, PolicySetting()).pi.sum()  # the weights are used
    scs = [generate("profile", s) for s in range(6)]
    (packed,) = batch.pack(scs, enc)
    plain = batch.evaluate(packed, [PolicySetting("dsgc", 1.0, hops=2, delta=0.5)])
    ones = batch.evaluate(
        packed,
        [PolicySetting("dsgc", 1.0, hops=2, delta=0.5)],
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
    # a file whose edges were stripped (the key removed, as another team may hand it over) reads,
    # and the induced file carries them
    stripped = tmp_path / "stripped.jsonl"
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    stripped.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "edges"}) + "\n" for r in lines)
    )
    assert main(["induce", str(stripped), "--out", str(out), "--report"]) == 0
    assert "no edges to score against" in capsys.readouterr().out
    assert [json.loads(x)["edges"] for x in out.read_text().splitlines()] == [
        r["edges"] for r in rows
    ]


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


# --- variants 15-18 (data/calibration/inducer.md), each from tier D's first run --------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("logged as remote pilot RP-9C4", "RP9C4 is on the roster"),  # no separator at all
        ("issued operator card OC-0613", "card oc613 is recorded"),  # leading zeros
        ("labelled with barcode 5521-ZT", "Barcode 5521ZT was scanned"),  # digits, then letters
        ("tagged as consignment QX-40-118", "consignment qx40118 was booked"),
    ],
)
def test_a_code_in_any_style_variant_15(a, b):
    shared = {m for m in mentions(a) & mentions(b) if m.startswith("code:")}
    assert shared, (sorted(mentions(a)), sorted(mentions(b)))


def test_a_piece_of_a_code_is_no_code_and_a_full_name_is_one_clue_variant_15():
    # 'QX-40' inside 'QX-40-118' and inside its near miss 'QX-40-181' is no shared code
    assert not mentions("consignment QX-40-118 arrived") & mentions("consignment QX-40-181 left")
    # a person's two names, and the pair of words they make, are one clue when the full name is
    shared = sorted(mentions("Tomasz Wierzbicki renewed") & mentions("Tomasz Wierzbicki asked"))
    assert distinct_names(shared, frozenset()) == ["name:tomasz wierzbicki"], shared
    # the bare number of a numbered thing is that thing
    shared = sorted(mentions("covers invoice 2291 in full") & mentions("the invoice 2291 refund"))
    assert distinct_names(shared, frozenset()) == ["code:invoice#2291"], shared


def test_a_phrase_labelling_another_id_is_no_link_variant_17():
    """'operator card OC-0613' and 'operator card OC-0631' name two cards: the phrase they share
    is no evidence; the same phrase before the same id still is."""
    query = "Is Benedikt Auer cleared to drive the reach truck?"
    texts = [
        "Benedikt Auer was issued operator card OC-0613.",
        "Operator card OC-0631 was reported lost at the gatehouse.",
    ]
    assert not linked(texts, query)
    texts[1] = "Operator card OC-0613 was reported lost at the gatehouse."
    assert linked(texts, query) == {(0, 1)}


def test_the_querys_subject_links_the_two_facts_about_the_question_variant_16_18():
    """A control's two facts and a distractor all name the query's subject: the two that say
    something else the query asks are linked (the subject gets its weight between
    them), and a distractor about nothing else the query asks is not."""
    texts = [
        "The Larkspur choir normally rehearses on Wednesday evenings in the chapel.",
        "This week the Larkspur choir rehearses on Thursday instead.",
        "The Larkspur choir is recording a carol album in December.",
    ]
    assert linked(texts, "When does the Larkspur choir rehearse this week?") == {(0, 1)}


def test_the_worked_example_loses_no_chain_to_a_block_about_its_person_variant_18():
    """Section 2.2 with its competitors: `Alice booked the large room` shares only Alice with
    the chain's first block; linking them lifted the competitor over the chain's last block (the
    chain was lost, kept on the true edges). Now the induced graph is the true one at full
    confidence, and each true edge's reverse at TWO_WAY of it (mention order alone
    cannot decide a direction)."""
    sc = worked_example()
    ((edges, conf),) = induce_weighted([sc], "mentions")
    full = {e for e, c in zip(edges, conf, strict=True) if c == max(conf)}
    assert full == set(sc.edges)
    assert set(edges) - full == {(p, d) for d, p in sc.edges}
    assert min(conf) == pytest.approx(max(conf) * TWO_WAY)
    t = run(sc.with_edges(edges, conf), get_encoder("lexical"), PolicySetting())
    assert all(t.kept[sc.ids.index(c)] for c in sc.chain)


@pytest.mark.parametrize(
    "tier,n,templates",
    [("tier_d", 24, 4), ("tier_e", 24, 4), ("tier_f", 24, 4), ("tier_g", 20, 4), ("tier_h", 20, 4),
     ("tier_i", 33, 11), ("tier_j", 6, 5), ("tier_k", 36, 12), ("tier_l", 33, 11)],
)  # fmt: skip
def test_a_hand_written_tier_is_its_source_laid_out(tier, n, templates):
    """data/handwritten/TIER/scenarios.jsonl is compose(source.json): n hand-written scenarios at
    20 and 50 blocks, the fillers from the tier's one hand-written pool."""
    from workbench.beyond.tiers import compose
    from workbench.dsgc.scenario import dumps

    folder = ROOT / "data" / "handwritten" / tier
    scs = compose(folder / "source.json")
    assert "".join(dumps(s) + "\n" for s in scs) == (folder / "scenarios.jsonl").read_text()
    assert len(scs) == 2 * n and {len(s.blocks) for s in scs} == {20, 50}
    assert {s.regime for s in scs} == {"target", "control"}
    assert len({s.template for s in scs}) == templates


# --- what tier E's first run changed ---------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("arrived with tracking number TRK 5530-1178", "TRK55301178 was scanned"),
        ("shipment SHP-20417 went out", "shipment shp20417 was handed over"),
        ("filed under INC0048812", "INC-48812 was passed on"),
    ],
)
def test_an_identifier_in_any_style_variant_19(a, b):
    assert {m for m in mentions(a) & mentions(b) if m.startswith("code:")}


@pytest.mark.parametrize(
    "a,b",
    [
        ("tracking number TRK 5530-1178", "tracking number TRK 5530-1187"),  # no piece 'TRK 5530'
        ("accessioned as lot 88-B-217", "lot 88-B-271 was thawed"),  # no 'lot 88'
        ("filed as case 2026/AP/0913", "case 2026/AP/0931 was withdrawn"),  # no 'case 2026'
    ],
)
def test_pieces_of_near_miss_identifiers_link_nothing_variant_19(a, b):
    shared = [m for m in mentions(a) & mentions(b) if not m.startswith("term:")]
    assert not shared, shared


def test_one_word_of_two_full_names_is_no_link_variant_19():
    texts = [
        "whoever covers Pier Road substation can isolate the feeder alone at night",
        "the Fenwick crew covers the Pier Lane pumping station",
        "the Saltmarsh crew now covers the Pier Road substation",
        "Maribel Ortiz takes over as lead of the Saltmarsh crew",
    ]
    pairs = linked(texts, "Can Maribel Ortiz isolate the feeder at night?")
    assert (0, 2) in pairs and (2, 3) in pairs  # the chain, joined by 'Pier Road', 'Saltmarsh'
    assert (0, 1) not in pairs and (1, 2) not in pairs  # 'Pier' of 'Pier Lane' is another place
    assert "name:easter" not in mentions("over the Easter weekend the gym is closed")
    assert "term:farmers market" in mentions("the farmers' market is held on the square")


# --- what tier F's first run changed ---------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("street trading consent ST/2291/F issued", "Consent ST2291F is recorded"),
        ("model code T14-EDU", "Model t14edu ships with it"),
        ("temporary event notice TEN-6613", "Notice ten6613 was approved"),  # not 'ten' = 10
    ],
)
def test_identifiers_with_a_letter_suffix_variant_20(a, b):
    assert {m for m in mentions(a) & mentions(b) if m.startswith("code:")}


def test_what_is_not_an_identifier_or_a_name_variant_20():
    # a numbered thing is not read out of an identifier that goes on after the number
    assert not mentions("model code T14-EDU here") & mentions("Model code T14-PRO there") - {
        "term:model code"
    }
    # a mixed-case run of letters and digits is an encoding, not an id (two identical screenshots)
    assert not [m for m in mentions('"image_url": "base64,iVBORw0KGgo="') if "ivbor" in m]
    # a capitalized word only ever first in its sentence is no name; one said inside is
    from workbench.beyond.mentions import scenario_mentions

    ms, qm = scenario_mentions(
        ["Works listed under schedule Q may start.", "Works under schedule R may not."],
        "May Kestrel start work?",
    )
    assert not any(m.startswith("name:") for m in ms[0] | ms[1]), (ms, qm)
    ms, _ = scenario_mentions(["Kestrel Building Ltd was granted a licence."], "Is Kestrel ready?")
    assert "name:kestrel" in ms[0]


# --- what tier G's first run changed ---------------------------------------------------------------


@pytest.mark.parametrize(
    "a,b",
    [
        ("deposited as record TH/2019/0447", "Record th-2019-447 was shelved"),  # a padded group
        ("batch number BW-24-0371", "Batch bw240371 shares"),  # ... still as written whole
        ("stock number SKU 55-0913-G", "SKU 550913G is booked"),  # a spaced prefix, then whole
    ],
)
def test_identifiers_written_other_ways_variant_21(a, b):
    assert {m for m in mentions(a) & mentions(b) if m.startswith("code:")}


def test_no_phrase_out_of_an_identifier_and_no_name_out_of_a_label_variant_21():
    shared = mentions("added to group eng-platform-7") & mentions("group eng-platform-17 has")
    assert not shared, shared  # 'eng platform' is no phrase of its own
    shared = mentions("the Year 11 chemistry exam") & mentions("the Year 10 chemistry exam")
    assert "name:year" not in shared and "code:year#11" in mentions("the Year 11 exam")
