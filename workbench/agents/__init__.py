"""Closure inside a running agent: one adapter per framework over the same closure-aware trimmer
(`workbench.closure.logs.trim`) and the same guard (`workbench.agents.core.guard`).

- LangChain v1: `ClosureMiddleware(max_tokens=..., strategy=..., persist=False)` and
  `ClosureGuard()` for `create_agent(..., middleware=[...])` (`workbench.agents.for_langchain`);
- the OpenAI Agents SDK: `closure_input_filter(max_tokens=...)` and `ClosureGuard(inner)` for
  `RunConfig(call_model_input_filter=...)` (`workbench.agents.for_openai_agents`);
- pydantic-ai v2: `ClosureHistory(max_tokens=...)` and `ClosureGuard()` for
  `Agent(..., capabilities=[...])` (`workbench.agents.for_pydantic_ai`).

Each framework is imported only when its adapter is asked for, so `import workbench.agents` needs
none of them; `ClosureGuard(framework, ...)` here builds the guard for the one you run.
"""

from __future__ import annotations

import importlib

from workbench.agents.core import ClosureError, NoRoom, Record, Records

FRAMEWORKS = ("langchain", "openai-agents", "pydantic-ai")
ADAPTERS = {
    "ClosureMiddleware": "workbench.agents.for_langchain",
    "closure_input_filter": "workbench.agents.for_openai_agents",
    "ClosureHistory": "workbench.agents.for_pydantic_ai",
}
GUARDS = dict(zip(FRAMEWORKS, ("workbench.agents.for_langchain",
                               "workbench.agents.for_openai_agents",
                               "workbench.agents.for_pydantic_ai"), strict=True))  # fmt: skip


def ClosureGuard(framework: str, *args, **kwargs):  # noqa: N802 - a class per framework
    """The guard for `framework` ("langchain", "openai-agents" or "pydantic-ai"); the same class
    is `workbench.agents.for_<framework>.ClosureGuard`."""
    if framework not in GUARDS:
        raise ValueError(f"framework must be one of {', '.join(GUARDS)}, got {framework!r}")
    return importlib.import_module(GUARDS[framework]).ClosureGuard(*args, **kwargs)


def __getattr__(name: str):
    if name in ADAPTERS:
        return getattr(importlib.import_module(ADAPTERS[name]), name)
    raise AttributeError(f"module 'workbench.agents' has no attribute {name!r}")


__all__ = ["ClosureError", "ClosureGuard", "ClosureHistory", "ClosureMiddleware", "NoRoom",
           "Record", "Records", "closure_input_filter"]  # fmt: skip
