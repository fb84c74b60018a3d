"""What the agent tests share: the tools, a scripted model that calls them as a person's turns ask,
and the turns."""

from __future__ import annotations

import json

from workbench.agents.bench import world

PAD = "filler " * 60  # a long tool answer: a few of them pass any small budget
ASYNC = [False, True]


def submit(task: str) -> str:
    """Submit a job; returns its id."""
    return json.dumps({"id": f"job_{sum(map(ord, task)) * 7:04x}", "task": task, "note": PAD})


def poll(job_id: str) -> str:
    """Poll a job by id."""
    return json.dumps({"job": job_id, "status": "ready"})


class Script:
    """A model that submits on 'submit X', polls the job it can see on 'poll X', else answers."""

    def __init__(self):
        self.requests: list = []

    def decide(self, texts: list[tuple[str, str]]):
        """texts: (role, text) of the request; (tool, args) or (None, text)."""
        self.requests.append(texts)
        if not texts:
            return None, "nothing to go on"
        role, last = texts[-1]
        if role == "tool":
            return None, "done"
        if last.startswith("submit "):
            return "submit", {"task": last.split()[1]}
        if last.startswith("poll "):
            task = last.split()[1]
            seen = [t for _, t in texts if task in t and "job_" in t]
            h = world.HANDLE.findall(seen[-1])[0] if seen else "job_0000"
            return "poll", {"job_id": h}
        return None, "ok"


class Remembering(Script):
    """A model that polls a job by its right id whether or not its request shows it (a guess that
    hits, as the benchmark's scripted model makes them): an id used without its definition."""

    def decide(self, texts):
        tool, x = super().decide(texts)
        if tool == "poll":
            task = texts[-1][1].split()[1]
            x = {"job_id": json.loads(submit(task))["id"]}
        return tool, x


TURNS = [f"submit {t}" for t in ("alpha", "beta", "gamma", "delta")] + ["poll alpha", "poll beta"]
