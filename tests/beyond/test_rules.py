"""The inducer's rules table (`workbench.beyond.rules`): the table as docs/induction.md shows it,
the rare-word rule, and the mention rule's nearness to the query."""

from __future__ import annotations

from pathlib import Path

from workbench.beyond import rules as R
from workbench.beyond.mentions import ANCHOR, MAX_LINKS, mention_links, query_words_used

ROOT = Path(__file__).resolve().parents[2]
FILLER = "Ana: we talked about the weather and the bus again today."


def store(n: int, special: dict[int, str]) -> list[str]:
    """n turns of one common filler, with `special` turns at their positions."""
    return [special.get(i, FILLER) for i in range(n)]


def test_the_doc_shows_the_table_as_the_code_declares_it():
    doc = (ROOT / "docs" / "induction.md").read_text(encoding="utf-8")
    for r in R.RULES:
        assert f"| `{r.name}` | {r.matches} | {r.direction} | {r.confidence} |" in doc, r.name
    assert R.NAMES == ("role", "order", "two-way", "rare-word")


def test_no_word_is_rare_in_a_store_under_64_blocks():
    special = {3: "Ana: the transom is rotten.", 9: "Bo: a new transom of elm, then."}
    q = "What wood is the new transom?"
    assert R.word_cap(63) < 2 <= R.word_cap(64)
    assert R.rare_word_links(store(63, special), q) == []
    found = R.rare_word_links(store(64, special), q)
    assert {(x.dependent, x.prerequisite) for x in found} == {(3, 9), (9, 3)}
    assert {x.rule for x in found} == {"rare-word"}


def test_a_shared_rare_word_links_two_blocks_about_the_query_both_ways():
    special = {
        5: "Ana: my sister's kiln cracked in the frost.",
        40: "Bo: did she fix the kiln before the pottery fair?",
        70: "Ana: the kiln at the fair is the school's.",
    }
    q = "When is the pottery fair?"
    (few,) = {x.shared for x in R.rare_word_links(store(90, special), q)}
    assert few == ("word:fair",)  # in 90 blocks a word three use is not rare
    (one, back) = R.rare_word_links(store(100, special), q)  # 5 uses no word of the query
    assert (one.dependent, one.prerequisite, back.dependent, back.prerequisite) == (40, 70, 70, 40)
    assert one.shared == ("word:fair", "word:kiln")
    kiln, fair = R.WORD / (3 - 1), R.WORD * ANCHOR / (2 - 1)  # 'fair' is asked: an anchor
    assert one.confidence == back.confidence == 1 - (1 - kiln) * (1 - fair)


def test_a_word_of_the_query_counts_anchor_as_much():
    special = {10: "Ana: the kiln is hot.", 50: "Bo: the kiln fair is on Sunday."}
    (x, _) = R.rare_word_links(store(80, special), "Is the kiln ready?")
    assert x.confidence == R.WORD * ANCHOR  # 'kiln' is shared and asked: an anchor


def test_a_word_every_turn_of_a_speaker_uses_says_nothing_of_what_a_turn_is_about():
    texts = [f"Maud: line {k} about something else entirely" for k in range(100)]
    texts[7] = "Maud: the ranunculus drowned."
    texts[60] = "Tom: ranunculus again?"
    about = query_words_used(texts, "What did Maud say of the ranunculus?")
    assert set(about) == {7, 60} and about[7] == about[60] and len(about[7]) == 1  # not 'maud'


def test_each_block_keeps_at_most_its_two_strongest_rare_word_partners():
    special = {i: f"Ana: the kiln {w} was asked about." for i, w in
               zip(range(2, 42, 8), ["red", "blue", "green", "grey", "white"], strict=True)}  # fmt: skip
    special[70] = "Bo: red blue green grey white, asked about every kiln."
    found = R.rare_word_links(store(100, special), "Which kiln was asked about?")
    partners = [x.prerequisite for x in found if x.dependent == 70]
    assert len(partners) == MAX_LINKS


def test_a_pair_a_shared_mention_links_gets_no_rare_word_link_too():
    special = {4: "Ana: Dorota fixed the kiln at the fair.", 44: "Bo: Dorota and the kiln, again."}
    found = R.links(store(80, special), "Who fixed the kiln at the fair?")
    rules = {x.rule for x in found if {x.dependent, x.prerequisite} == {4, 44}}
    assert rules and "rare-word" not in rules


def test_a_mention_link_far_from_the_query_is_dropped():
    texts = [
        "A request from Lena Okafor: may the boiler be restarted?",  # uses the query's words
        "The permit PX-41 is held by Lena Okafor.",  # one link from it
        "Permit PX-41 names valve VQ-9.",  # two links
        "Valve VQ-9 sits beside crate CR-77.",  # three
        "Crate CR-77 went to the depot.",  # four
        *["The canteen opens at eight."] * 5,
    ]
    found = {tuple(sorted((x.dependent, x.prerequisite))) for x in mention_links(
        texts, "May the boiler be restarted?")}  # fmt: skip
    assert (0, 1) in found and (1, 2) in found  # a pair with a block within one link
    assert (2, 3) not in found and (3, 4) not in found
