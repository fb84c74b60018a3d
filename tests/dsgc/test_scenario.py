"""Scenario files: round trip, and a clear error naming file, line and field for bad input."""

import json

import pytest

from workbench.common.encoders import token_cost
from workbench.dsgc.generator import generate
from workbench.dsgc.scenario import ScenarioError, load_scenarios, save_scenarios


def good(**over):
    d = {
        "id": "s1",
        "template": "t",
        "regime": "target",
        "seed": 1,
        "query": "May Alice go?",
        "answer": "yes",
        "blocks": [
            {"id": "a", "text": "Alice holds pass P", "kind": "chain"},
            {"id": "b", "text": "Pass P opens gate G", "kind": "chain"},
            {"id": "x", "text": "Lunch is at noon", "kind": "filler"},
        ],
        "edges": [["b", "a"]],
        "chain": ["a", "b"],
        "source": "external",
    }
    d.update(over)
    return d


def write(tmp_path, objs, raw_lines=()):
    p = tmp_path / "s.jsonl"
    lines = [json.dumps(o) for o in objs] + list(raw_lines)
    p.write_text("\n".join(lines) + "\n")
    return p


def test_round_trip_keeps_everything_including_metadata(tmp_path):
    scs = [generate("role", 3), generate("expense", 4, 30)]
    p = tmp_path / "out.jsonl"
    save_scenarios(scs, p)
    back = load_scenarios(p)
    assert back == scs
    assert [s.metadata for s in back] == [s.metadata for s in scs]
    assert p.read_text() == "".join(
        json.dumps(s.to_dict(), ensure_ascii=False, separators=(", ", ": ")) + "\n" for s in scs
    )


def test_external_file_with_extra_keys_and_free_ids(tmp_path):
    p = write(tmp_path, [good()])
    (s,) = load_scenarios(p)
    assert s.metadata == {"source": "external"}
    assert s.ids == ["a", "b", "x"]
    assert s.edge_index().tolist() == [[1, 0]]
    assert s.chain_mass() == 4 + 5 and s.budget(2.0) == 18 and s.budget(0.5) == 9


@pytest.mark.parametrize(
    "mutate, field, words",
    [
        (lambda d: d.pop("query"), "query", "missing"),
        (lambda d: d.pop("blocks"), "blocks", "missing"),
        (lambda d: d["blocks"].append({"id": "a", "text": "again"}), "blocks[3].id", "duplicate"),
        (lambda d: d["edges"].append(["b", "zz"]), "edges[1]", "not a block id"),
        (lambda d: d["edges"].append(["a", "a"]), "edges[1]", "self-loop"),
        (lambda d: d.update(chain=["a", "nope"]), "chain", "unknown block"),
        (lambda d: d.update(chain=["a", "a"]), "chain", "not a set"),
        (lambda d: d["blocks"][1].update(text="   "), "blocks[1].text", "empty"),
        (lambda d: d["blocks"][2].update(text=42), "blocks[2].text", "must be a string"),
        (lambda d: d["blocks"][0].pop("text"), "blocks[0].text", "missing"),
        (lambda d: d.update(edges=[["a"]]), "edges[0]", "pair"),
        (lambda d: d.update(seed="3"), "seed", "integer"),
    ],
)
def test_bad_scenarios_name_file_line_and_field(tmp_path, mutate, field, words):
    bad = good(id="s2")
    mutate(bad)
    p = write(tmp_path, [good(), bad])
    with pytest.raises(ScenarioError) as e:
        load_scenarios(p)
    msg = str(e.value)
    assert str(p) in msg and "line 2" in msg and f"field '{field}'" in msg and words in msg
    assert e.value.line == 2 and e.value.field == field


def test_invalid_json_names_the_line(tmp_path):
    p = write(tmp_path, [good()], raw_lines=['{"id": "s2", "query": '])
    with pytest.raises(ScenarioError, match=r"s\.jsonl: line 2: invalid JSON"):
        load_scenarios(p)


def test_duplicate_scenario_ids_and_missing_file(tmp_path):
    p = write(tmp_path, [good(), good()])
    with pytest.raises(ScenarioError, match="line 2: field 'id': duplicate scenario id"):
        load_scenarios(p)
    with pytest.raises(ScenarioError, match="cannot open"):
        load_scenarios(tmp_path / "missing.jsonl")


def test_failed_save_leaves_no_partial_file(tmp_path):
    p = tmp_path / "out.jsonl"
    p.write_text("previous\n")

    def boom():
        yield generate("role", 0)
        raise RuntimeError("generator failed half way")

    with pytest.raises(RuntimeError):
        save_scenarios(boom(), p)
    assert p.read_text() == "previous\n"
    assert list(tmp_path.iterdir()) == [p]


def test_token_cost():
    assert token_cost("a b  c\n d") == 4 and token_cost("") == 1 and token_cost("   ") == 1
