"""The benchmark generator: structure, determinism, honeypots, fillers, the answer reader."""

import hashlib
from pathlib import Path

import pytest

from workbench.common.seeds import Draw
from workbench.dsgc.generator import TEMPLATES, TIERS, generate, generate_many
from workbench.dsgc.scenario import dumps, load_scenarios
from workbench.dsgc.trace import read_answer

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("template", list(TEMPLATES))
@pytest.mark.parametrize("blocks", [20, 50])
def test_structure(template, blocks, global_seed):
    t = TEMPLATES[template]
    sc = generate(template, global_seed, blocks)
    kinds = sc.kinds
    assert len(sc.blocks) == blocks and len(set(sc.texts)) == blocks
    assert kinds.count("chain") == t.depth and kinds.count("honeypot") == t.honeypots
    assert sc.chain == tuple(f"c{i}" for i in range(1, t.depth + 1))
    assert sorted(b.id for b in sc.blocks if b.kind == "filler") == sorted(
        f"f{i}" for i in range(1, blocks - t.depth - t.honeypots + 1)
    )
    # c_{i+1} depends on c_i; honeypots and fillers have no edges at all
    assert sc.edges == tuple((f"c{i + 1}", f"c{i}") for i in range(1, t.depth))
    assert sc.regime == t.regime and sc.answer in ("yes", "no")
    assert sc.id == f"{template}/seed={global_seed}/blocks={blocks}"


def test_store_order_is_shuffled_and_seed_dependent():
    a, b = generate("role", 0), generate("role", 1)
    assert a.ids != b.ids or a.texts != b.texts
    firsts = {generate("role", s).ids[0] for s in range(30)}
    assert len(firsts) > 5  # not always the same block first


def test_same_seed_same_bytes_as_the_frozen_set():
    """The committed main set is the cross-machine reference: regenerating gives the same bytes."""
    for blocks in (20, 50):
        path = ROOT / "data" / "scenarios" / f"main_{blocks}.jsonl"
        frozen = path.read_text(encoding="utf-8").splitlines()
        again = [dumps(s) for s in generate_many(list(TEMPLATES), range(15), blocks)]
        assert again == frozen
        assert load_scenarios(path) == generate_many(list(TEMPLATES), range(15), blocks)


def test_draw_is_counter_based_and_stable():
    """Draws are SHA-256 of 'key#counter' (recomputed here independently), so they depend on the
    key and the counter only: the same key gives the same sequence, another key another one."""
    a = Draw("x", 1)
    seq = [a.below(1000) for _ in range(8)]
    expect = [
        int.from_bytes(hashlib.sha256(f"x/1#{i}".encode()).digest()[:8], "big") % 1000
        for i in range(8)
    ]
    assert seq == expect
    other = Draw("x", 2)
    assert [other.below(1000) for _ in range(8)] != seq
    assert sorted(Draw("y").shuffle(range(10))) == list(range(10))
    assert len(set(Draw("z").sample(range(10), 10))) == 10


@pytest.mark.parametrize("tier", TIERS)
def test_honeypot_tiers(tier):
    for template in TEMPLATES:
        sc = generate(template, 2, tier=tier)
        assert sc.metadata["tier"] == tier
        assert sum(k == "honeypot" for k in sc.kinds) == TEMPLATES[template].honeypots


def test_medium_honeypots_share_decisive_vocabulary_but_cannot_complete_the_chain():
    decisive = {"role": {"delete", "backup"}, "profile": {"telemetry", "directly"}}
    for template, words in decisive.items():
        for seed in range(10):
            sc = generate(template, seed)
            bridge = sc.metadata["facts"]["links"][1:]  # bundle/clearance or ticket/relay ids
            for b in sc.blocks:
                if b.kind == "honeypot":
                    low = b.text.lower()
                    assert any(w in low for w in words)
                    assert not any(x in b.text for x in bridge)


def test_fillers_avoid_every_querys_decisive_words():
    banned = {
        "delete",
        "backup",
        "telemetry",
        "directly",
        "expense",
        "approve",
        "pressure",
        "limit",
        "budget",
        "clearance",
        "bundle",
        "relay",
    }
    for template in TEMPLATES:
        for seed in range(10):
            for b in generate(template, seed, 50).blocks:
                if b.kind == "filler":
                    assert not banned & set(b.text.lower().replace(".", "").split())


def test_too_few_blocks_is_an_error():
    with pytest.raises(ValueError, match="at least 5 blocks"):
        generate("role", 0, 4)
    assert len(generate("role", 0, 5).blocks) == 5
    with pytest.raises(ValueError, match="unknown template"):
        generate("nope", 0)
    with pytest.raises(ValueError, match="unknown honeypot tier"):
        generate("role", 0, tier="extreme")


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_reader_answers_only_with_the_whole_chain(template):
    answers = set()
    for seed in range(12):
        sc = generate(template, seed)
        assert read_answer(sc, sc.ids) == sc.answer
        answers.add(sc.answer)
        for missing in sc.chain:
            assert read_answer(sc, [i for i in sc.ids if i != missing]) == "unknown"
    assert answers == {"yes", "no"}  # both answers occur
