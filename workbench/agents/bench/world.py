"""The scripted world the agents-under-a-budget benchmark drives through each framework's real
loop: a person's turns (submit a job, ask how it is doing, fetch its results, with notes to read
and small talk between), the tools that answer them (their results define the job handles), and
a scripted model that acts only on what its request holds.

The model is a stand-in for an LLM that remembers *what* it was asked (the person's latest turn,
if the request still holds it) but never a handle: to poll or fetch a job it looks for the handle
in the request (a result that defines it for that task, or any message naming it beside the
task); when none is there it guesses one of the right shape near the ids it has seen, as a model
would. The tools accept any handle that exists: a guess that lands on another team's job is acted
on without a word (a silent corruption); one that exists nowhere is a loud tool error. Every draw
comes from `seeds.rng(seed, ...)`, so a run's choices differ between policies only where their
requests do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from workbench.common.handles import HANDLE_RE
from workbench.common.seeds import rng as seeded

TASKS = ("churn", "ledger", "latency", "audit", "forecast", "backfill", "rollout", "invoice")
TOPICS = ("the quarterly offsite", "the badge policy", "the new canteen menu", "the fire drill",
          "parking permits", "the printer fleet")  # fmt: skip
ASK = {
    "submit": ("Please submit the {t} job.", "Kick off the {t} job for me.",
               "Can you start the {t} job now?"),
    "poll": ("How is the {t} job doing?", "Is the {t} job finished yet?",
             "Check on the {t} job, please."),
    "fetch": ("Fetch the results of the {t} job.", "Pull the {t} job's output.",
              "Get me what the {t} job produced."),
    "notes": ("Read me the notes on {t}.", "What do the notes say about {t}?"),
    "chat": ("Thanks, that helps.", "Sorry, I was in a meeting.", "Keep it short today, please.",
             "Lunch is at noon if you want to join."),
}  # fmt: skip
KINDS = {  # a person's words -> what they ask for (the model's reading of its request)
    "submit": ("submit", "kick off", "start the"),
    "poll": ("doing", "finished", "check on"),
    "fetch": ("fetch", "pull the", "produced"),
    "notes": ("notes",),
}
FILLER = (
    "Attendance was lower than planned and the room was too warm. Several people asked for the "
    "slides in advance next time. The facilities team will look at the air handling before the "
    "next session. A reminder that travel claims are due at the end of the month. "
)
HANDLE = re.compile(HANDLE_RE)
TOOLS = ("submit_job", "poll_job", "fetch_result", "read_notes")
SYSTEM = "You run data jobs for the analytics team. Use the tools; keep answers short."


def script(seed: int, tasks: int = 3, chatter: float = 1.2) -> list[tuple[str, str, str]]:
    """A person's turns: (kind, task or topic, text). Each task is submitted, polled, fetched in
    order, with about `chatter` notes or small-talk turns before each step."""
    r = seeded(seed, "agents-script")
    names = [str(x) for x in r.choice(TASKS, size=tasks, replace=False)]
    steps = [(k, t) for k in ("submit", "poll", "fetch") for t in names]
    r.shuffle(steps[tasks:])  # submissions first, then polls and fetches interleaved ...
    order, done = [], set()
    for k, t in steps:
        if k == "fetch" and ("poll", t) not in done:
            order.append(("poll", t))  # ... a fetch only after its poll
            done.add(("poll", t))
        if (k, t) not in done:
            order.append((k, t))
            done.add((k, t))
    turns = []
    for k, t in order:
        for _ in range(int(r.poisson(chatter))):
            if r.random() < 0.6:
                topic = str(r.choice(TOPICS))
                turns.append(("notes", topic, str(r.choice(ASK["notes"])).format(t=topic)))
            else:
                turns.append(("chat", "", str(r.choice(ASK["chat"]))))
        turns.append((k, t, str(r.choice(ASK[k])).format(t=t)))
    return turns


@dataclass
class World:
    """The tools' side of one run: the jobs (a dense id space shared with other teams) and what
    happened to each call."""

    seed: int
    jobs: dict = field(default_factory=dict)  # handle -> [task or None (another team's), ready]
    counts: dict = field(default_factory=lambda: dict.fromkeys(
        ("ok", "corrupt", "tool_error", "done"), 0))  # fmt: skip
    next_hex: int = 0
    shown: dict = field(default_factory=dict)  # handle -> the tool call that first showed it
    tick: int = 0  # tool calls so far

    def __post_init__(self):
        r = seeded(self.seed, "agents-world")
        self.next_hex = int(r.integers(0x2000, 0xD000))
        for _ in range(6):  # other teams' jobs already in the id space
            self._issue(None, r)

    def _issue(self, task, r) -> str:
        self.next_hex += int(r.integers(1, 3))  # gaps of 1-2: a guess near an id often exists
        h = f"job_{self.next_hex:04x}"
        self.jobs[h] = [task, False]
        return h

    def call(self, name: str, args: dict, turn: int, want: str | None = None) -> str:
        """Run a tool; `want` is the task the model meant (the simulator's ground truth)."""
        r = seeded(self.seed, "agents-tool", turn)
        self.tick += 1
        if name == "submit_job":
            h = self._issue(args["task"], r)
            self._issue(None, r)  # another team submits too
            self.counts["ok"] += 1
            return self._show(json.dumps({"id": h, "task": args["task"], "status": "queued"}))
        if name == "read_notes":  # long, and naming other teams' jobs (a status board)
            words = FILLER * (2 + int(r.integers(0, 3)))
            others = [h for h, (task, _) in self.jobs.items() if task is None]
            board = ", ".join(
                str(x) for x in r.choice(others, size=min(3, len(others)), replace=False)
            )
            return self._show(
                f"Notes on {args['topic']}: {words.strip()}\nOther teams' jobs this week: {board}."
            )
        h = args.get("job_id", "")
        job = self.jobs.get(h)
        if job is None:
            self.counts["tool_error"] += 1
            return self._show(json.dumps({"error": f"no job {h}"}))
        if job[0] != want:  # another job, acted on as if it were the one meant
            self.counts["corrupt"] += 1
        else:
            self.counts["ok"] += 1
        if name == "poll_job":
            job[1] = True
            return self._show(
                json.dumps({"job": h, "task": job[0] or "other team", "status": "ready"})
            )
        if not job[1]:
            return self._show(json.dumps({"job": h, "error": "not ready: poll it first"}))
        if job[0] == want and want is not None:
            self.counts["done"] += 1
        rows = int(r.integers(100, 9000))
        return self._show(json.dumps({"job": h, "rows": rows, "summary": f"{rows} rows written"}))

    def _show(self, text: str) -> str:
        """A tool's answer, its handles noted as shown to the model (a request that names one
        later and lacks what showed it has lost a definition)."""
        for h in HANDLE.findall(text):
            self.shown.setdefault(h, self.tick)
        return text


@dataclass(frozen=True)
class Seen:
    """One message of a request as the model reads it."""

    role: str  # system, user, assistant, tool
    text: str


def ask_of(view: list[Seen]) -> tuple[str, str] | None:
    """(kind, task or topic) of the person's latest turn the request holds, or None."""
    people = [m for m in view if m.role == "user"]
    if not people:
        return None
    text = people[-1].text.lower()
    for kind, words in KINDS.items():
        if any(w in text for w in words):
            if kind == "notes":
                topic = next((t for t in TOPICS if t in text), "")
                return ("notes", topic)
            task = next((t for t in TASKS if t in text), None)
            return (kind, task) if task else None
    return ("chat", "")


def handle_for(view: list[Seen], task: str) -> str | None:
    """The handle of `task`'s job as the request shows it: a message naming a job beside the
    task (a submit result defines it; a later poll or the assistant's own words repeat it),
    newest first."""
    for m in reversed(view):
        if task not in m.text:
            continue
        for line in m.text.splitlines():
            if task in line:
                found = HANDLE.findall(line)
                if found:
                    return found[-1]
    return None


def guess(view: list[Seen], seed: int, turn: int) -> str:
    """A handle of the right shape near the ids the request shows (or anywhere, when it shows
    none): what a model writes when it cannot see the one it needs."""
    r = seeded(seed, "agents-guess", turn)
    seen = [int(h[4:], 16) for m in view for h in HANDLE.findall(m.text)]
    base = seen[int(r.integers(0, len(seen)))] if seen else int(r.integers(0x2000, 0xD000))
    return f"job_{base + int(r.choice([-2, -1, 1, 2])):04x}"


@dataclass
class Decision:
    """What the scripted model answers: a tool call, or text."""

    tool: str | None = None
    args: dict = field(default_factory=dict)
    text: str = ""
    task: str | None = None  # what the model meant (ground truth for the world)
    guessed: bool = False


def decide(view: list[Seen], seed: int, turn: int) -> Decision:
    """The scripted model: answer the person's latest turn from what the request holds."""
    if view and view[-1].role == "tool":  # a tool answered: report it in a sentence
        last = view[-1].text
        ask = ask_of(view)
        task = ask[1] if ask else ""
        hs = HANDLE.findall(last)
        if ask and ask[0] == "submit" and hs:
            return Decision(text=f"Submitted the {task} job as {hs[0]}.")
        if ask and ask[0] in ("poll", "fetch") and hs:
            return Decision(text=f"The {task} job ({hs[0]}): {last[:80]}")
        return Decision(text="Done. " + last[:60])
    ask = ask_of(view)
    if ask is None:
        return Decision(text="Sorry, I have lost track of what you asked; could you repeat it?")
    kind, what = ask
    if kind == "chat":
        return Decision(text="Noted.")
    if kind == "notes":
        return Decision("read_notes", {"topic": what})
    if kind == "submit":
        return Decision("submit_job", {"task": what}, task=what)
    h = handle_for(view, what)
    guessed = h is None
    if guessed:
        h = guess(view, seed, turn)
    tool = "poll_job" if kind == "poll" else "fetch_result"
    return Decision(tool, {"job_id": h}, task=what, guessed=guessed)
