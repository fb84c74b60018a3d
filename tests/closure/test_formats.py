"""A log format is one object: adding one is one new module and one registration line, and the
reading, the check, the trim and the writing then take logs in it without a change elsewhere."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.closure import logs
from workbench.closure.logs import formats
from workbench.closure.logs.formats import base
from workbench.closure.logs.trim import trim_log

ROOT = Path(__file__).resolve().parents[2]

# a made-up wire format: {"who": "me" | "bot" | "tool", "say": text, "ask": [{"id", "tool",
# "with"}], "for": the call id a tool message answers}; nothing in the package knows it
TOY = """
from workbench.closure.logs.formats.base import LogFormat, body_and_list, need
from workbench.closure.logs.logtypes import Log, Messages, err

ROLES = {"me": "user", "bot": "assistant", "tool": "tool", "rules": "system"}


class Toy(LogFormat):
    name = "toy"
    precedence = 10

    def says(self, m):
        return "who" if isinstance(m, dict) and "who" in m else None

    def read(self, obj):
        body, items = body_and_list(obj, self.key)
        out = Messages()
        for i, m in enumerate(items):
            who = need(m, "who", str, i)
            if who not in ROLES:
                raise err(f"unknown speaker {who!r}", i, "who")
            asks = m.get("ask") or []
            calls = tuple((need(a, "id", str, i, f"ask[{k}].id"), a["tool"])
                          for k, a in enumerate(asks))
            args = tuple(a.get("with", "") for a in asks)
            answers = (need(m, "for", str, i),) if who == "tool" else ()
            text = "\\n".join([m.get("say", ""), *args])
            out.add(ROLES[who], text, calls, answers, m, args)
        return Log(self.name, out, body=body)

    results_follow_call = True

    def noted(self, body, items, note):
        return self.join(body, [{"who": "rules", "say": note}, *items])


FORMAT = Toy()
"""

LOG = [
    {"who": "me", "say": "Find the invoice for ACME and mail it to finance."},
    {"who": "bot", "ask": [{"id": "c1", "tool": "find_invoice", "with": "ACME"}]},
    {"who": "tool", "for": "c1", "say": "invoice INV-77413 for ACME, 4,200 EUR"},
    {"who": "bot", "say": "Found it. " + "Checking the ledger before I send it. " * 30},
    {"who": "me", "say": "Go ahead."},
    {"who": "bot", "ask": [{"id": "c2", "tool": "mail", "with": "INV-77413 to finance"}]},
    {"who": "tool", "for": "c2", "say": "sent"},
    {"who": "me", "say": "Thanks."},
]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    path = tmp_path / "toy_format.py"
    path.write_text(TOY, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("toy_format", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(base, "REGISTRY", dict(base.REGISTRY))
    formats.register(module.FORMAT)  # the one registration line
    return module.FORMAT


def test_a_toy_format_is_read_checked_trimmed_and_written_by_the_one_object(toy):
    assert logs.detect(LOG) == "toy"
    log = logs.read(LOG)
    assert log.format == "toy" and len(log.messages) == len(LOG)
    assert logs.check(log).closed
    cut = logs.check(log, kept=[0, 1, 3, 4, 5, 6, 7])  # the result that defined INV-77413 cut
    assert not cut.closed and cut.orphan_handles
    t = trim_log(log, 60)
    assert t.report.closed and t.tokens <= 60
    back = logs.read(t.output, "toy")  # the trim's output is a toy log again
    kept_text = " ".join(m.text for m in back.messages)
    assert "INV-77413" in kept_text  # the mail call is kept with what defined its id, or a
    assert t.tombstones or 2 in t.kept  # tombstone stands for it
    with pytest.raises(logs.LogError, match="message 2: field 'for'"):
        logs.read([*LOG[:2], {"who": "tool", "say": "x"}], "toy")


def test_the_toy_format_s_order_rule_is_its_own(toy):
    late = [LOG[0], LOG[1], {"who": "me", "say": "hm?"}, LOG[2]]
    with pytest.raises(logs.LogError, match="must follow its call"):
        logs.read(late, "toy")


def test_no_module_outside_the_formats_branches_on_a_format_s_name():
    out = subprocess.run(
        ["grep", "-rnE", r"(format|fmt) *(==|!=|in \()", "workbench"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    hits = [h for h in out.splitlines() if "workbench/closure/logs/formats/" not in h]
    assert hits == []


def test_every_shipped_format_provides_what_the_contract_lists():
    for name in formats.FORMATS:
        f = formats.get(name)
        assert f.name == name and type(f).says is not base.LogFormat.says
        assert type(f).read is not base.LogFormat.read
        assert f.render([("user", "hi")]) is not None
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    contract = base.__doc__.split("Its contract:")[1]
    for method in re.findall(r"`(\w+)\(", contract):
        assert hasattr(base.LogFormat, method), method
        assert method in doc, f"docs/architecture.md does not list {method}"
    assert sys.modules["workbench.closure.logs.formats"].FORMATS == formats.FORMATS
