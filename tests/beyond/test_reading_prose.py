"""graphs read from text as people write it. Every script and its invisible characters,
locale numbers, initials, spaced ids, citations, aliases, short hashes and numbered clauses read
as one mention each; direction from what a block defines; the query gate that no phrase of the
query opens; the gated paraphrase link; the warnings for what a run cannot see. The texts here
are written for these tests, in other words than tier I's (data/handwritten/tier_i)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workbench.beyond.definitions import defined
from workbench.beyond.induce import PARA_WEIGHT, induce_ruled, paraphrase_link
from workbench.beyond.mentions import MIN_CONFIDENCE, mention_links
from workbench.beyond.reading import aliases, mentions
from workbench.beyond.rules import NAMES as RULES
from workbench.beyond.words import normalize
from workbench.cli import main
from workbench.dsgc.generator import generate
from workbench.dsgc.scenario import load_scenarios
from workbench.dsgc.unseen import input_warnings, lexical_blind

ROOT = Path(__file__).resolve().parents[2]
FILL = [f"Reminder {k}: the kettle in the break room is descaled on Fridays." for k in range(16)]


def links(texts: list[str], query: str) -> dict[tuple[int, int], tuple[str, float]]:
    """(dependent, prerequisite) -> (rule, confidence) among `texts`, first in a store of fillers."""
    return {
        (x.dependent, x.prerequisite): (x.rule, x.confidence)
        for x in mention_links([*texts, *FILL], query)
    }


def codes(text: str) -> set[str]:
    return {m for m in mentions(text) if m.startswith(("code:", "num:", "qty:", "cite:"))}


# --- every script ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "odd,plain",
    [
        ("locker LK\u00a04410 was emptied", "locker LK 4410 was emptied"),  # no-break space
        ("parcel ZX-55\u202f019 arrived", "parcel ZX-55 019 arrived"),  # narrow no-break space
        ("form QF\u00ad2231 signed", "form QF2231 signed"),  # soft hyphen
        ("token AB\u200b7781 revoked", "token AB7781 revoked"),  # zero-width space
        ("cost centre CC\u20114711 billed", "cost centre CC-4711 billed"),  # non-breaking hyphen
        ("ＲＴ－５１２ closed", "RT-512 closed"),  # full-width forms (NFKC)
    ],
)
def test_invisible_and_compatibility_characters_do_not_split_a_code(odd, plain):
    assert normalize(odd) != odd
    assert codes(odd) == codes(plain) and codes(plain)


def test_a_spaced_id_is_its_unspaced_form_and_not_its_near_miss():
    assert codes("booking KQ-902 118") & codes("booking KQ902118 confirmed")
    assert not codes("booking KQ-902 118") & codes("booking KQ-902 181")


def test_names_with_diacritics_and_other_scripts_are_names():
    ms = mentions("On the call were Ignác Dvořák, Оксана Левченко and Ødegård from Kraków.")
    assert {"name:ignác dvořák", "name:оксана левченко", "name:ødegård", "name:kraków"} <= ms


def test_a_capitalized_article_or_title_is_no_name():
    ms = mentions("Gestern hat Frau Brückner die Lieferung für Das Lager bestätigt.")
    assert "name:brückner" in ms
    assert not {"name:das", "name:frau", "name:die"} & ms


@pytest.mark.parametrize(
    "a,b",
    [
        ("Rechnung über 12.500 € offen", "an invoice of 12500 EUR is open"),
        ("la cuota es de 7,25 €", "the fee is €7.25"),
        ("1,250 people came", "1250 people came"),
    ],
)
def test_numbers_in_any_locale_are_one_number(a, b):
    qa = {m for m in codes(a) if m.startswith(("qty:", "num:"))}
    qb = {m for m in codes(b) if m.startswith(("qty:", "num:"))}
    assert qa & qb


def test_a_point_grouped_thousand_is_not_read_as_zero():
    assert "num:0" not in mentions("Budget 84.000 Euro für Halle 3")
    assert "num:84000" in mentions("Budget 84.000 Euro für Halle 3")


def test_an_initial_is_not_a_letter_code():
    """Two people who share an initial ('H.') are not thereby linked."""
    assert "code:h" not in mentions("The form was countersigned by H. Okafor on Monday.")
    assert "code:b" in mentions("the shuttle leaves from gate B tomorrow")


def test_the_query_gate_opens_when_no_block_repeats_a_phrase_of_the_query():
    texts = [
        "As shown in [4], strain gauges drift after long storage in damp air.",
        "[4] Moreau, L. (2018). Sensor drift in humid warehouses. Measurement 9, 3-19.",
    ]
    got = links(texts, "Why would a stored instrument read wrong?")
    assert (0, 1) in got and got[(0, 1)][0] == "role"


# --- citations, aliases, hashes, clauses ---------------------------------------------------------


def test_numbered_and_author_year_citations_meet_their_entries():
    assert "cite:12" in mentions("Pressure sores halve with hourly turns [12].")
    assert "cite:12" in defined("[12] Kaur, P. (2020). Turning schedules. Nurs. Rev. 4, 1-9.")
    cite = "cite:whitcombe2016"
    assert cite in mentions("Whitcombe et al. (2016) found the opposite effect.")
    assert cite in defined("Whitcombe, D., Arndt, S. and Obi, C. (2016). Dosing in the elderly.")
    assert cite not in mentions("Whitcombe and Ferris (2019) revisited it.")


def test_an_alias_given_once_links_the_block_that_uses_it_to_the_one_that_gave_it():
    texts = [
        "Our new quartermaster, Fenwick Odhiambo-Lisle, known to the crew as Lisle, keeps the keys.",
        "Lisle opened the powder store at dawn.",
    ]
    assert "lisle" in aliases(texts[0])
    assert list(aliases("Her crew have called her Red since the fire.")) == ["red"]  # one name
    got = links(texts, "Who opened the powder store?")
    assert got[(1, 0)][0] == "role"  # the block using the nickname depends on the one giving it
    assert "alias:northern yard" in mentions("the Leith site (known as the northern yard) is full")


def test_a_short_hash_is_its_full_form_and_not_a_neighbour():
    texts = [
        "commit 3be81c0f9a2d77e4: drop the retry on 409 responses",
        "3be81c0 is why the checkout page double-charges now",
        "commit 3be81c7 only touched the README",
    ]
    got = links(texts, "Why does the checkout page double-charge?")
    assert (1, 0) in got and got[(1, 0)][0] == "role"
    assert not {p for p in got if 2 in p}


def test_a_clause_cited_by_its_number_alone_is_that_clause():
    texts = [
        "11.3 The Tenant may sublet only with the Landlord's written consent.",
        "The Tenant sublet the garage in breach of 11.3, so the deposit is withheld.",
    ]
    got = links(texts, "Why is the deposit withheld?")
    assert (1, 0) in got and got[(1, 0)][0] == "role"


# --- direction from roles ------------------------------------------------------------------------


def test_a_definition_is_the_prerequisite_though_it_names_the_term_first():
    """Mention order alone made the definition the dependent (it names the term first)."""
    texts = [
        "\u201cCold Chain Site\u201d means the chilled store at Unit 9, Brackley Road.",
        "All vaccines must be held at the Cold Chain Site until the clinic opens.",
    ]
    got = links(texts, "Where must the vaccines be held?")
    assert got[(1, 0)][0] == "role"
    assert (0, 1) not in got


def test_a_lookup_row_is_the_prerequisite_of_the_row_that_uses_its_key():
    texts = [
        "sku | name | bin\nKL-330 | brass valve | aisle 14",
        "order | sku | qty\n9917 | KL-330 | 6",
    ]
    got = links(texts, "Which aisle holds the valves for order 9917?")
    assert got[(1, 0)][0] == "role" and (0, 1) not in got


def test_a_json_id_field_defines_the_handle_a_later_message_uses():
    """An earlier tool result defines its ids; a row reader must not take JSON for a table."""
    assert "code:batch7f21c9" in defined('{"batch_id": "batch_7f21c9", "status": "queued"}')
    assert not defined('{"batch": "batch_7f21c9", "status": "done"}\nnext line, with a comma')


def test_where_the_text_cannot_decide_the_other_way_is_weaker():
    got = links(
        ["Dana joined rota RX-19 last spring.", "Rota RX-19 covers the Sunday gate shift."],
        "Who covers the Sunday gate shift?",
    )
    (fwd,) = [p for p, (rule, _) in got.items() if rule == "order"]
    back = (fwd[1], fwd[0])
    assert got[back][0] == "two-way" and got[back][1] < got[fwd][1]
    assert set(RULES) == {"role", "order", "two-way", "rare-word"}


def test_mention_links_still_runs_on_the_generator_text_as_before():
    """Generated chains keep their true pairs (the notebook's beyond_edges.csv holds the rates)."""
    for seed in range(5):
        sc = generate("role", seed, 20)
        got = {
            frozenset((x.dependent, x.prerequisite))
            for x in mention_links(list(sc.texts), sc.query)
        }
        pos = sc.index()
        assert {frozenset((pos[d], pos[p])) for d, p in sc.edges} <= got


# --- the paraphrase link -------------------------------------------------------------------------


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def test_the_paraphrase_link_joins_what_no_mention_joins_below_any_mention_link():
    q = _unit([1, 0, 0, 0])
    emb = np.stack(
        [
            _unit([0.9, 0.4, 0, 0]),  # faces the query
            _unit([0.1, 0.9, 0.1, 0]),  # like block 0 where the query is not: its prerequisite
            _unit([0.95, 0.2, 0, 0.1]),  # like the query too: a distractor, not chosen
            _unit([0, 0, 0, 1]),  # unrelated
        ]
    )
    dep, pre, conf = paraphrase_link(emb, q, set())
    assert (dep, pre) == (0, 1)
    assert 0 < conf <= PARA_WEIGHT < MIN_CONFIDENCE
    assert paraphrase_link(emb, q, {(0, 1), (1, 2)}) != (0, 1, conf)  # a mention joins them
    assert paraphrase_link(np.eye(4), q, set()) is None  # nothing alike enough: no link


def test_induce_records_the_rule_of_every_edge(tmp_path):
    src = ROOT / "data" / "handwritten" / "tier_i" / "scenarios.jsonl"
    stripped = tmp_path / "s.jsonl"
    with stripped.open("w", encoding="utf-8") as f:
        for line in src.read_text(encoding="utf-8").splitlines()[:6]:
            d = json.loads(line)
            d.pop("edges")
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    out = tmp_path / "i.jsonl"
    assert main(["induce", str(stripped), "--out", str(out)]) == 0
    scs = load_scenarios(out)  # the reader validates against the shipped schema
    for sc in scs:
        rules = sc.metadata["edge_rule"]
        assert len(rules) == len(sc.edges) and set(rules) <= set(RULES)
    found = induce_ruled(scs, "mentions")
    assert [list(r) for _, _, r in found] == [sc.metadata["edge_rule"] for sc in scs]


# --- what a run cannot see -----------------------------------------------------------------------


def test_a_query_the_lexical_encoder_cannot_read_is_named():
    assert lexical_blind("Где ключ от склада?") == "none"
    assert lexical_blind("Darf Frau Schäfer am Montag hinein?") is None  # one word in pieces
    assert lexical_blind("¿Quién firmó según Muñoz?") == "part"
    assert lexical_blind("Who signed the form?") is None


@pytest.mark.sentence
def test_evaluate_warns_for_an_unreadable_query_and_for_dsgc_without_edges(tmp_path, capsys):
    sc = generate("role", 1, 12)
    d = json.loads(
        (ROOT / "data" / "handwritten" / "tier_i" / "scenarios.jsonl").read_text().splitlines()[0]
    )
    d.pop("edges")
    d["query"] = "Можно ли пациенту морфин сегодня?"
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(d, ensure_ascii=False) + "\n", encoding="utf-8")
    assert (
        main(["evaluate", str(path), "--policy", "dsgc", "--out", str(tmp_path / "r.jsonl")]) == 0
    )
    err = capsys.readouterr().err
    assert "reads no word of the query" in err and "run `workbench induce` first" in err
    assert main(["evaluate", str(path), "--policy", "similarity", "--encoder", "sentence",
                 "--out", str(tmp_path / "r2.jsonl")]) == 0  # fmt: skip
    assert "warning" not in capsys.readouterr().err
    assert input_warnings([sc], "lexical", True) == []


def test_a_full_name_first_in_its_sentence_names_someone_said_alone_later():
    """A sentence-first capital is no name by itself, but a full name is one."""
    texts = [
        "Ottoline Marsh keeps the harbour ledger for the guild.",
        "Ottoline signed off the grain shipment yesterday.",
    ]
    got = links(texts, "Who signed off the grain shipment?")
    assert {frozenset(p) for p in got} >= {frozenset((0, 1))}


def test_japanese_is_read_as_runs_of_one_script():
    """Without spaces a clause reads as one word: each run of one script is read instead."""
    ms = mentions("会計はサトウ・ユキ（通称ユッキー）が担当、帳簿の棚は三階にある。")
    assert {"name:サトウ・ユキ", "name:ユキ", "alias:ユッキー", "term:帳簿 棚"} <= ms
    assert "num:4410" in mentions("伝票4410は昨日処理した。")  # a number against kanji
    got = links(
        ["経理部の金庫：暗証番号は毎週変わる。", "ユッキーが昨日、金庫の暗証番号を更新した。",
         "サトウ・ユキ（通称ユッキー）は経理部の主任だ。"],
        "金庫の暗証番号を最後に変えたのはだれですか？",
    )  # fmt: skip
    assert got[(1, 2)][0] == "role"  # the nickname's user depends on the block that gives it
