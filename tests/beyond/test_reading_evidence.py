"""What any text carries, read whatever the register: a string written without spaces whose
parts a separator joins, an abbreviation and the words it abbreviates, a name the writer puts in
quotation marks, a handle, a name written as one word of capitalized parts, and a configuration
file's sections and values (a section defined where the file names it). The texts here are
written for these tests, in other words than any tier's."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.beyond.definitions import defined
from workbench.beyond.mentions import mention_links, scenario_positions
from workbench.beyond.reading import READERS, aliases, mentions

ROOT = Path(__file__).resolve().parents[2]
FILL = [f"Notice {k}: the meeting room blinds are cleaned on Mondays." for k in range(16)]


def linked(texts: list[str], query: str) -> set[tuple[int, int]]:
    """The pairs (direction ignored) the mention rules link among `texts`, first in a store of
    fillers."""
    return {
        (min(x.dependent, x.prerequisite), max(x.dependent, x.prerequisite))
        for x in mention_links([*texts, *FILL], query)
    }


@pytest.mark.parametrize(
    "text,code",
    [
        ("the worker reads settings from deploy.toml at start", "code:deploytoml"),
        ("flag checkout_v2_beta is off in staging", "code:checkoutv2beta"),
        ("the audience is group-c for now", "code:groupc"),
        ("task=thumb-gen was killed", "code:thumbgen"),
    ],
)
def test_a_string_its_separators_join_is_one_identifier(text, code):
    assert code in mentions(text)


def test_a_json_key_is_a_field_not_a_thing():
    ms = mentions('{"account_id": "acc_77f2", "display_name": "Ruth"}')
    assert "code:accountid" not in ms and "code:displayname" not in ms
    assert "code:acc77f2" in ms


def test_a_table_header_names_fields_not_things():
    sheet = "lot_no | item_code | site\nL-77 | BX-4 | north"
    ms = mentions(sheet)
    assert "code:lotno" not in ms and "code:itemcode" not in ms
    assert {"code:l77", "code:bx4"} <= ms


def test_a_word_the_language_joins_with_a_function_word_is_no_identifier():
    assert "code:dropoff" not in mentions("The drop-off point moved to gate two.")
    assert "code:nightporter" in mentions("Ask the night-porter for the keys.")


def test_a_key_names_a_field_in_any_format():
    ms = mentions("api:\n  pool_size: 20\n  retry_mode: fixed")
    assert "code:poolsize" not in ms and "code:retrymode" not in ms
    assert "code:maxheap" not in mentions("pod=api-7f9c2 max_heap=2g restarted")
    assert "code:api7f9c2" in mentions("pod=api-7f9c2 max_heap=2g restarted")


def test_a_date_says_when_and_none_of_its_pieces_is_read():
    a = mentions("2026-03-14T09:15:02Z worker-2 started")
    b = mentions("2026-03-14T09:48:40Z worker-5 stopped")
    assert not a & b
    assert mentions("renewal due 2027-05-01") == frozenset({"term:renewal due"})


def test_a_speaker_label_names_who_speaks_not_what_is_spoken_of():
    assert "name:ottilie" not in mentions("[00:12:40] Ottilie: the van is booked.")
    assert "name:ottilie" not in mentions("Ottilie (10:02): the van is booked.")
    assert "name:bram" not in mentions("> From: Bram Idowu\n> Approved.")
    assert "name:bram" not in mentions("On 3 May, Bram wrote:\n> Fine by me.")
    assert "name:bram" in mentions("Ottilie: ask Bram about the van.")
    assert "name:ottilie" in mentions("Ottilie: 42 hit points, one potion left.")  # a record
    assert "name:may" not in mentions("Seen on 3 May") and "name:nov" not in mentions("Due 2 Nov")


def test_an_abbreviation_meets_the_words_it_abbreviates():
    texts = [
        "Expense claims above the limit go to the CFO.",
        "Gwen Ashby is our chief financial officer.",
    ]
    pos = scenario_positions(tuple([*texts, *FILL]), "Who signs off a large expense claim?")[0]
    assert "alias:cfo" in pos[0] and "alias:cfo" in pos[1]
    assert (0, 1) in linked(texts, "Who signs off a large expense claim?")


def test_an_abbreviation_most_blocks_say_is_common_and_spells_nothing():
    texts = [f"Week {k}: the CFO report is filed." for k in range(12)]
    texts += ["Gwen Ashby is our chief financial officer."]
    pos = scenario_positions(tuple([*texts, *FILL]), "Who is the CFO?")[2]
    assert not any(m.startswith("alias:") for p in pos for m in p)


def test_two_short_words_are_no_abbreviation():
    texts = ["The ID card is due back on Friday.", "Rent is due on the first."]
    pos = scenario_positions(tuple([*texts, *FILL]), "When is the card due?")[0]
    assert not any(m.startswith("alias:") for p in pos for m in p)


def test_a_quoted_name_is_said_again_unquoted():
    assert aliases("Night cover belongs to whoever holds the 'lantern' shift.") == {"lantern": 42}
    texts = [
        "Night cover belongs to whoever holds the 'lantern' shift.",
        "Bo took the lantern shift from Cai until Sunday.",
    ]
    assert (0, 1) in linked(texts, "Who covers tonight?")


def test_quotes_on_a_line_of_json_are_syntax():
    assert aliases('Looking it up.\n{"city": "Quito", "units": "metric"}') == {}


def test_a_handle_and_a_one_word_name_of_capitals_are_names():
    ms = mentions("@tomasz please check the FastTrack queue")
    assert "name:tomasz" in ms and "code:fasttrack" in ms


QUERY = "Which host does the nightly backup job write to?"


def test_a_config_section_is_defined_where_the_file_names_it():
    ini = "[archive]\nhost = 10.9.0.4\nkeep_days = 30\nverbose = true"
    env = "# nightly backup job\nTARGET=archive\nDRY_RUN=false"
    assert "code:archive" in defined(ini) and "code:archive" in mentions(env)
    assert "code:true" not in mentions(ini) and "code:false" not in mentions(env)
    found = {(x.dependent, x.prerequisite) for x in mention_links([ini, env, *FILL], QUERY)}
    assert (1, 0) in found  # the file that names the section depends on the section
    yaml = "groups:\n  pilot-west:\n    members: 40"
    assert "code:pilotwest" in defined(yaml)


def test_one_line_of_prose_with_a_colon_is_no_setting():
    assert "code:done" not in mentions("Status: done")


def test_the_doc_shows_the_readers_as_the_code_declares_them():
    doc = (ROOT / "docs" / "induction.md").read_text("utf-8")
    for r in READERS:
        assert f"| {r.name} | {r.reads} | {r.gives} |" in doc, r.name
    assert len({r.name for r in READERS}) == len(READERS)
