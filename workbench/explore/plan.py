"""The workshop's ninety minutes, as data: its five steps, each with its minutes, the parts
(predictions) it asks, what the instructor says, and the misconceptions to expect. The instructor's
page (`/instructor` of the room server) shows it beside the room's tally; notebook 06's timing
table says the same (a test holds the two together)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step of the session: its title, minutes (low, high), the parts it asks, the points to
    make and the misconceptions the room tends to bring."""

    title: str
    minutes: tuple[int, int]
    parts: tuple[str, ...]
    points: tuple[str, ...]
    misconceptions: tuple[str, ...]

    @property
    def time(self) -> str:
        lo, hi = self.minutes
        return f"{lo}" if lo == hi else f"{lo}-{hi}"

    def __repr__(self) -> str:
        return f"Step({self.title}: {self.time} min, parts {', '.join(self.parts) or '-'})"


STEPS = (
    Step(
        "0. Setting",
        (10, 10),
        ("1",),
        (
            "A store of blocks and a token budget: before the agent answers, a policy keeps what "
            "fits and evicts the rest. Whatever is evicted is gone for every retriever after it.",
            "A chain is what the answer needs: each block depends on the one before it.",
            "Blocks carry neutral ids (B01, B02, ...) until a reveal, so an id gives nothing away.",
        ),
        (
            "'Retrieval will find it anyway': retention comes first, and an evicted block is "
            "never a candidate.",
            "'The budget keeps most blocks': at M = 2 it holds the chain twice over, a third of "
            "the store at most.",
        ),
    ),
    Step(
        "1. Predict the eviction",
        (15, 15),
        ("2", "3", "4"),
        (
            "Similarity-only ranks by resemblance to the query; the block the answer needs in the "
            "middle of the chain often resembles it least.",
            "Definition 1: a needed block with a more query-like dependent is a structurally "
            "indirect prerequisite.",
            "One store is an anecdote; part 4 counts fifteen seeds.",
        ),
        (
            "'The least relevant block is the least needed': relevance to the query is not "
            "necessity for the answer.",
            "'A honeypot ranks first': often a chain block does; the harm is lower down.",
            "'It was bad luck': part 4 shows how often it happens on this template.",
        ),
    ),
    Step(
        "2. Rescue by propagation",
        (15, 20),
        ("5", "6", "7", "8"),
        (
            "Recency keeps what is new, not what is needed: neither ranking knows dependencies.",
            "DSGC adds to each block the relevance of the blocks that depend on it: I = r + λ·π.",
            "A bigger budget also works, at a price in tokens that grows with the store.",
        ),
        (
            "'A larger λ is always better': it lifts every depended-on block, distractors with "
            "dependents included.",
            "'More budget fixes everything': it buys time until the store grows.",
            "'DSGC needs a perfect graph': notebook 10 measures what a wrong one costs.",
        ),
    ),
    Step(
        "3-4. The one-hop boundary",
        (20, 20),
        ("9", "10", "11", "12", "13"),
        (
            "One hop carries relevance one link: a block two links from the query-like one gets "
            "nothing.",
            "Two damped hops reach it, and lift whatever else sits two links from a relevant "
            "block.",
            "Part 13 asks the question at 50 blocks: more distractors, more losses.",
        ),
        (
            "'One hop is enough because the chain is short': the distance that matters is from "
            "the query-like block, not the chain's length.",
            "'Any fix will do': some do not (recency, a sharper τ), and each that does has a "
            "price (λ lifts others, a budget costs tokens).",
        ),
    ),
    Step(
        "5. Free exploration",
        (15, 25),
        (),
        (
            "Find a seed where DSGC fails, read its landscape, and explain the failure in one "
            "sentence: which block was displaced, by which block, by what margin.",
            "Try the sentence encoder and a larger store.",
        ),
        (
            "'A failure is the policy's fault': look at the margin; a near-tie is a coin toss "
            "the encoder decides.",
        ),
    ),
)


def total_minutes() -> tuple[int, int]:
    """The session's length, low and high."""
    return sum(s.minutes[0] for s in STEPS), sum(s.minutes[1] for s in STEPS)


def step_of(part: str) -> Step:
    """The step that asks `part`."""
    return next(s for s in STEPS if part in s.parts)
