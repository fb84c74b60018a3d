"""Agent logs to test against: one neutral conversation rendered in the OpenAI, Anthropic and
LangChain formats; conversations made from the simulated agent's episodes; and three hand-written
realistic ones (a job id, an order number and a file path; two parallel training runs and a
document; a support ticket whose tool result is a list of blocks).

A conversation is a list of steps: ("system" | "user" | "assistant", text), ("calls", text,
[(call id, tool name, args dict)]), ("results", [(call id, result: dict, str or list of blocks)]).
"""

from __future__ import annotations

import json
import re

from workbench.closure.logs.formats import get
from workbench.closure.window.spans import closure_patterns
from workbench.common.seeds import rng as seeded

ROUNDS_STREAM = 21  # the generated conversation's one stream under its seed

# --- rendering --------------------------------------------------------------------------------


to_openai = get("openai").render
to_anthropic = get("anthropic").render
to_langchain = get("langchain").render
to_responses = get("responses").render


def render(conv, format: str):
    """A conversation in one format (the format's own `render`)."""
    return get(format).render(conv)


# --- conversations from the simulated agent's episodes ----------------------------------------

CALL_RE = re.compile(r"^(\w+)\((.*?)\)\s*(?:#\s*(.*))?$")
ARG_RE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[\w.]+)')

SYSTEM = (
    "You are an operations agent. Use the tools to submit and poll jobs, open warehouse sessions, "
    "search and read documents. Reuse the ids the tools return."
)


def from_episode(spans, system: str = SYSTEM) -> list:
    """A conversation from a simulated episode: user spans -> user messages, reasoning ->
    assistant text, a call -> one assistant tool call (its text parsed as name(k="v", ...)), its
    result or retrieval -> the tool result."""
    conv = [("system", system)]
    ids = {}
    for s in spans:
        if s.role == "user":
            conv.append(("user", s.text))
        elif s.role == "reasoning":
            conv.append(("assistant", s.text))
        elif s.role == "call":
            m = CALL_RE.match(s.text)
            name, argtext, note = (
                (m.group(1), m.group(2), m.group(3)) if m else ("tool", s.text, None)
            )
            args = {
                k: json.loads(v) if v.startswith('"') else _num(v)
                for k, v in ARG_RE.findall(argtext)
            }
            cid = f"call_{s.id}"
            ids[s.id] = cid
            conv.append(("calls", note or "", [(cid, name, args)]))
        elif s.role in ("result", "retrieval"):
            cid = ids.get(s.depends_on[0]) if s.depends_on else None
            if cid is not None:
                conv.append(("results", [(cid, json.loads(s.text))]))
    return conv


def _num(v):
    try:
        return int(v)
    except ValueError:
        return v


# --- three hand-written realistic conversations -----------------------------------------------

HANDLE = r"\b(?:run|job|sess|doc)_[0-9a-f]{4,}\b|\bORD-\d{5}\b|\bTCK-\d{4}\b|/data/[\w./-]+"
# a result defines what its "id", "<name>_id" or "path" keys hold
DEFINITION = r'"(?:[A-Za-z][A-Za-z0-9]*_)?(?:id|path)"\s*:\s*"(' + HANDLE + ')"'
REALISTIC_PATTERNS = closure_patterns(HANDLE, DEFINITION)

_CHAT_Q = (
    "Unrelated: the dashboard team asks whether the revenue charts should move to a colour-blind "
    "friendly palette with the legend below the plot. Any conventions for the regional pages?"
)
_CHAT_A = (
    "Yes: a sequential palette for magnitudes and a small qualitative one for categories, the "
    "legend below the plot past four series, a stable region order across pages, units on every "
    "axis, and arrows rather than red and green for up and down."
)

HANDWRITTEN = {
    "sales_export": [
        (
            "system",
            "You are a data-operations assistant at Acme. Use the tools to query the "
            "warehouse, export results, look up orders and send email.",
        ),
        ("user", "Pull Q3 sales by region and email the export to finance when it is ready."),
        (
            "calls",
            "",
            [
                (
                    "call_q1",
                    "run_query",
                    {
                        "sql": "SELECT region, SUM(amount) FROM sales "
                        "WHERE quarter = '2026Q3' GROUP BY region"
                    },
                )
            ],
        ),
        ("results", [("call_q1", {"job_id": "job_7f3a2c", "status": "queued"})]),
        ("assistant", "The query is queued; I will export it when it finishes."),
        ("user", "While that runs: a customer says order ORD-20931 was charged twice."),
        ("calls", "", [("call_o1", "lookup_order", {"order_id": "ORD-20931"})]),
        (
            "results",
            [
                (
                    "call_o1",
                    {
                        "order_id": "ORD-20931",
                        "status": "paid",
                        "charges": [
                            {"charge": "ch_1", "amount": 129.0},
                            {"charge": "ch_2", "amount": 129.0},
                        ],
                    },
                )
            ],
        ),
        ("assistant", "Two identical charges of 129.00. I will hold the refund until you confirm."),
        ("user", _CHAT_Q),
        ("assistant", _CHAT_A),
        ("calls", "Checking the query.", [("call_s1", "get_job_status", {"job_id": "job_7f3a2c"})]),
        ("results", [("call_s1", {"job": "job_7f3a2c", "status": "done", "rows": 412})]),
        (
            "calls",
            "",
            [("call_e1", "export_results", {"job_id": "job_7f3a2c", "format": "parquet"})],
        ),
        ("results", [("call_e1", {"path": "/data/exports/q3_sales_7f3a2c.parquet", "rows": 412})]),
        ("assistant", "The export is written."),
        ("user", _CHAT_Q.replace("revenue", "churn")),
        ("assistant", _CHAT_A),
        ("user", "Billing confirmed. Refund the duplicate charge and send the export to finance."),
        (
            "calls",
            "",
            [
                ("call_r1", "refund_order", {"order_id": "ORD-20931", "charge": "ch_2"}),
                (
                    "call_m1",
                    "send_email",
                    {
                        "to": "finance@acme.example",
                        "subject": "Q3 sales by region",
                        "attachment": "/data/exports/q3_sales_7f3a2c.parquet",
                    },
                ),
            ],
        ),
        (
            "results",
            [
                ("call_r1", {"refund": "re_55", "status": "succeeded"}),
                ("call_m1", {"message": "queued for delivery"}),
            ],
        ),
        ("assistant", "Refunded ch_2 and sent the export to finance."),
    ],
    "training_runs": [
        (
            "system",
            "You are an ML platform assistant. Launch and compare training runs; cite docs.",
        ),
        ("user", "Launch two churn-model runs, learning rate 0.001 and 0.003, then compare them."),
        (
            "calls",
            "Launching both.",
            [
                ("call_l1", "launch_run", {"model": "churn", "lr": 0.001}),
                ("call_l2", "launch_run", {"model": "churn", "lr": 0.003}),
            ],
        ),
        (
            "results",
            [
                ("call_l1", {"run_id": "run_4e19a0", "status": "starting"}),
                ("call_l2", {"run_id": "run_4e19b7", "status": "starting"}),
            ],
        ),
        ("user", "Also find the doc on our evaluation protocol."),
        ("calls", "", [("call_d1", "search_docs", {"query": "churn evaluation protocol"})]),
        ("results", [("call_d1", {"id": "doc_9c01", "title": "Churn evaluation protocol v3"})]),
        ("user", _CHAT_Q),
        ("assistant", _CHAT_A),
        ("calls", "", [("call_p1", "poll_run", {"run": "run_4e19a0"})]),
        ("results", [("call_p1", {"run": "run_4e19a0", "status": "done", "auc": 0.861})]),
        ("calls", "", [("call_p2", "poll_run", {"run": "run_4e19b7"})]),
        ("results", [("call_p2", {"run": "run_4e19b7", "status": "done", "auc": 0.874})]),
        ("user", "Compare the two runs against the protocol and summarize."),
        (
            "calls",
            "",
            [
                (
                    "call_c1",
                    "compare_runs",
                    {"runs": ["run_4e19a0", "run_4e19b7"], "metric": "auc"},
                ),
                ("call_r1", "read_doc", {"doc": "doc_9c01", "section": "metrics"}),
            ],
        ),
        (
            "results",
            [
                ("call_c1", {"winner": "run_4e19b7", "delta_auc": 0.013}),
                ("call_r1", "Report AUC on the held-out quarter; a 0.01 gain is material."),
            ],
        ),
        ("assistant", "run_4e19b7 wins by 0.013 AUC, material under the protocol (doc_9c01)."),
    ],
    "support_ticket": [
        ("system", "You are a support agent. Open tickets, attach logs, escalate when needed."),
        ("user", "The customer on TCK-4821 says exports fail with a timeout since Monday."),
        ("calls", "", [("call_t1", "get_ticket", {"ticket_id": "TCK-4821"})]),
        (
            "results",
            [
                (
                    "call_t1",
                    [
                        {
                            "type": "text",
                            "text": json.dumps(
                                {"ticket_id": "TCK-4821", "customer": "Globex", "priority": "high"}
                            ),
                        }
                    ],
                )
            ],
        ),
        ("calls", "", [("call_g1", "fetch_logs", {"service": "export", "since": "monday"})]),
        ("results", [("call_g1", {"path": "/data/logs/export_2026-11-23.log", "lines": 18211})]),
        ("user", _CHAT_Q),
        ("assistant", _CHAT_A),
        (
            "calls",
            "",
            [
                (
                    "call_a1",
                    "attach_file",
                    {"ticket": "TCK-4821", "path": "/data/logs/export_2026-11-23.log"},
                )
            ],
        ),
        ("results", [("call_a1", {"attachment_id": "doc_44710a", "status": "attached"})]),
        ("user", "Escalate it to engineering with the attachment."),
        (
            "calls",
            "",
            [
                (
                    "call_e1",
                    "escalate",
                    {"ticket": "TCK-4821", "attachment": "doc_44710a", "team": "engineering"},
                )
            ],
        ),
        ("results", [("call_e1", {"status": "escalated"})]),
        ("assistant", "Escalated TCK-4821 to engineering with the export log attached."),
    ],
}


# --- long logs for timing --------------------------------------------------------------------


def long_conversation(n_messages: int, seed: int = 0, reach: str = "uniform") -> list:
    """A conversation of about `n_messages` messages for scaling runs, O(1) work a message: a
    user request, two parallel submits whose results define job ids, a poll naming one of them
    or, three times in ten, an older job: any earlier one (`reach="uniform"`: definitions far
    back, the costly case for a trim) or one a few rounds back (`"recent"`, geometric, mean 10)."""
    if reach not in ("uniform", "recent"):
        raise ValueError(f"reach must be 'uniform' or 'recent', got {reach!r}")

    rng = seeded(seed, ROUNDS_STREAM)
    conv = [("system", SYSTEM)]
    jobs: list[str] = []
    r, n = 0, 1
    while n < n_messages:
        conv.append(("user", f"Round {r}: submit the {r % 7} and {r % 11} refreshes and poll one."))
        a, b = f"job_{2 * r:06x}", f"job_{2 * r + 1:06x}"
        calls = [(f"call_{r}_s{k}", "submit", {"task": f"refresh_{(r + k) % 13}"}) for k in (0, 1)]
        conv.append(("calls", "", calls))
        conv.append(
            ("results", [(calls[0][0], {"job_id": a, "state": "queued"})]),
        )
        conv.append(("results", [(calls[1][0], {"job_id": b, "state": "queued"})]))
        jobs += [a, b]
        back = int(rng.integers(len(jobs))) if reach == "uniform" else int(rng.geometric(0.05))
        old = jobs[max(len(jobs) - 1 - back, 0)] if rng.random() < 0.3 else a
        conv.append(("calls", "", [(f"call_{r}_p", "poll", {"job_id": old})]))
        conv.append(
            ("results", [(f"call_{r}_p", {"state": "running", "pct": int(rng.integers(100))})])
        )
        conv.append(("assistant", f"Round {r}: both submitted; {old} is running."))
        r, n = r + 1, n + 7
    return conv
