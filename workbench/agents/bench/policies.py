"""The scripted benchmark's context policies, as values: which editor runs before each model call
(ours, one of the framework's own, or none) and whether our guard runs behind it. Each driver
builds an editor from its name (`drivers.EDITORS`); `Policy.name` is the label the tables show."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    """One context policy: `editor` ("none", "closure" for ours, or a built-in's name), ours'
    `strategy` and `persist` (LangChain: the checkpointed state itself trimmed), and `guard`
    (our `ClosureGuard` behind the editor, given the budget)."""

    editor: str
    strategy: str = "relevance"
    persist: bool = False
    guard: bool = False

    @property
    def ours(self) -> bool:
        return self.editor == "closure"

    @property
    def name(self) -> str:
        if self.ours:
            return "closure" + (" persist" if self.persist else "") + (
                " last" if self.strategy == "last" else "")  # fmt: skip
        return self.editor + (" + guard" if self.guard else "")

    @property
    def kind(self) -> str:
        """How the tables group it: ours, a built-in, a built-in with our guard, or none."""
        if self.ours:
            return "ours"
        if self.editor == "none":
            return "none"
        return "built-in + our guard" if self.guard else "built-in"


def _with_guards(*builtins: str) -> tuple:
    return tuple(p for b in builtins for p in (Policy(b), Policy(b, guard=True)))


# ours: "closure" the closure trim by relevance to the person's latest turn (the adapters'
# `strategy="relevance"`, not their default: a running agent's next step needs what that turn
# names), "closure last" the adapters' default, the newest turns that fit
OURS = (Policy("closure"), Policy("closure", "last"))
POLICIES = {
    "langchain": (Policy("none"), *OURS, Policy("closure", persist=True),
                  *_with_guards("trim_messages", "trim_messages (last)", "summarization",
                                "clear tool uses")),
    "openai-agents": (Policy("none"), *OURS, Policy("tool output trimmer"),
                      *_with_guards("session limit", "keep last n filter")),
    "pydantic-ai": (Policy("none"), *OURS, *_with_guards("keep last n")),
}  # fmt: skip


def policy(framework: str, name: str) -> Policy:
    """The policy of `framework` shown as `name`."""
    for p in POLICIES.get(framework, ()):
        if p.name == name:
            return p
    raise ValueError(f"unknown policy {name!r} for {framework!r}")
