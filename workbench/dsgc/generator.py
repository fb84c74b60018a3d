"""The benchmark generator: two control templates, two target templates, honeypots and fillers.

Every draw comes from SHA-256 of (template, seed, counter), so a seed gives the same scenario on
every machine and every Python or numpy version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.common.seeds import Draw
from workbench.dsgc.scenario import Block, Scenario

TIERS = ("easy", "medium", "hard")


# --- fillers ---------------------------------------------------------------------------------
# Neutral statements about other people, rooms, offices and routine operations. They avoid the
# decisive vocabulary of every query below (delete, backup, send, telemetry, expense, approve,
# pressure, limit, ...), so they can compete only through shared function words or, for the
# sentence encoder, through general office-and-operations meaning.

FILLER_FRAMES = (
    "The {team} team moved its weekly sync to {day} afternoon.",
    "Room {room} on floor {floor} is booked for the {event} on {day}.",
    "{person} from {dept} will present the quarterly {topic} summary next {day}.",
    "The cafeteria on floor {floor} serves the {menu} menu this week.",
    "Printer {room} in the {dept} wing was serviced on {day}.",
    "The {dept} newsletter now goes out every other {day}.",
    "Parking level {floor} stays closed for repainting until {day}.",
    "{person} joined the {team} team as a {role} this month.",
    "The {event} for the {dept} group starts at {hour} o'clock on {day}.",
    "Visitors to the {site} office sign in at the front desk.",
    "The {team} wiki page lists {count} open onboarding tasks.",
    "Conference room {room} now has a wall screen and {count} chairs.",
    "The nightly log rotation on the {site} cluster finished in {count} minutes.",
    "{person} updated the {topic} runbook after the {day} review.",
    "The {site} data center replaced {count} cooling fans last {day}.",
    "Ticket volume for the {team} desk fell by {count} percent in {month}.",
    "The {dept} group archived its {topic} dashboards in {month}.",
    "Load balancer health checks on the {site} cluster run every {count} seconds.",
    "The {team} on-call rotation changes hands each {day} morning.",
    "{person} renewed the TLS certificate for the {site} status page.",
    "Log shipping from the {site} cluster now goes through a new collector.",
    "The {site} metrics dashboard was rebuilt after the {month} outage.",
    "Event streams from the {site} edge nodes are compressed before upload.",
    "Usage statistics for the {team} portal are exported every {day}.",
    "The monitoring agent on the {site} hosts was upgraded in {month}.",
    "Outbound traffic from the {site} office passes through a proxy.",
)

FILLER_SLOTS = {
    "team": ("harbor", "maple", "granite", "cobalt", "lantern", "willow", "summit", "ember"),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    "room": ("B12", "C4", "D7", "E19", "F3", "G21", "K8", "L15"),
    "floor": ("two", "three", "four", "five", "six"),
    "event": ("design critique", "onboarding lunch", "town hall", "hiring panel", "book club"),
    "person": ("Priya", "Tomasz", "Yuki", "Olumide", "Ines", "Rafael", "Mei", "Sven"),
    "dept": ("finance", "legal", "research", "facilities", "marketing", "support"),
    "topic": ("hiring", "latency", "uptime", "survey", "capacity", "incident"),
    "menu": ("autumn", "winter", "vegetarian", "regional", "noodle"),
    "role": ("designer", "analyst", "technical writer", "site engineer", "recruiter"),
    "hour": ("nine", "ten", "eleven", "two", "three", "four"),
    "site": ("Lisbon", "Osaka", "Denver", "Tallinn", "Nairobi", "Quito"),
    "count": ("three", "five", "seven", "twelve", "eighteen", "twenty"),
    "month": ("March", "April", "June", "August", "October"),
}


def fillers(draw: Draw, n: int) -> list[str]:
    """n distinct filler sentences: frames used round-robin in a shuffled order, slots drawn."""
    out: list[str] = []
    seen: set[str] = set()
    frames = draw.shuffle(FILLER_FRAMES)
    i = 0
    while len(out) < n:
        frame = frames[i % len(frames)]
        i += 1
        text = frame.format(**{k: draw.choice(v) for k, v in FILLER_SLOTS.items()})
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


# --- templates -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Draft:
    """What a template writes before assembly: query, chain texts (c1 first), the honeypot pool
    of each tier, the verdict and the facts the answer reader needs."""

    query: str
    chain: tuple[str, ...]
    pools: dict[str, tuple[str, ...]]  # tier -> honeypot candidates
    yes: bool
    facts: dict


USERS = (
    "Alice",
    "Bogdan",
    "Carmen",
    "Dmitri",
    "Elena",
    "Farid",
    "Greta",
    "Hiroshi",
    "Ilse",
    "Jonas",
    "Kemal",
    "Lucia",
    "Marek",
    "Noor",
    "Oskar",
)
SERVICES = (
    "ledger",
    "orchid",
    "quartz",
    "falcon",
    "juniper",
    "nimbus",
    "otter",
    "pylon",
    "saffron",
    "tundra",
    "vesper",
    "zephyr",
)
PROJECTS = (
    "Atlas",
    "Beacon",
    "Cinder",
    "Delta",
    "Everest",
    "Fjord",
    "Glacier",
    "Horizon",
    "Indigo",
    "Kestrel",
    "Lumen",
    "Meridian",
)
MACHINES = ("compressor", "boiler", "pump", "turbine", "chiller", "kiln")


@dataclass(frozen=True)
class Frames:
    """A template's sentences as format strings (the one copy: the large store compiles them
    too): the query, the chain (c1 first) and the honeypot pool of each tier."""

    query: str
    chain: tuple[str, ...]
    pools: dict[str, tuple[str, ...]]  # tier -> honeypot candidates

    def write(self, values: dict) -> tuple[str, tuple[str, ...], dict[str, tuple[str, ...]]]:
        """(query, chain, pools) with every slot filled from `values`."""
        return (
            self.query.format(**values),
            tuple(s.format(**values) for s in self.chain),
            {tier: tuple(s.format(**values) for s in pool) for tier, pool in self.pools.items()},
        )


FRAMES = {
    "role": Frames(
        "May {user} delete the encrypted production backup?",
        (
            "{user} was placed in access bundle {bundle} for production backup work.",
            "Bundle {bundle} maps onto clearance level {clearance} in our access directory.",
            "Clearance {clearance} {verb} deleting the encrypted production backup.",
        ),
        {
            "easy": (
                "The encrypted archive drive on floor two was relabelled last week.",
                "Backup tapes are stored in the basement vault.",
                "A production freeze starts before the holidays.",
            ),
            "medium": (
                "Deleting an encrypted production backup needs a second reviewer.",
                "Only operators may delete a production backup at night.",
                "The encrypted production backup is kept for one year.",
                "Requests to delete an encrypted backup cite a ticket.",
            ),
            "hard": (
                "{other} may delete the encrypted production backup with clearance {clearance}.",
                "{user} asked whether the encrypted production backup can be deleted.",
                "Clearance {clearance} was reviewed for deleting the encrypted production backup.",
            ),
        },
    ),
    "profile": Frames(  # c1 shares only identifiers with the query, none of the decision words
        "May the {svc} service send telemetry directly?",
        (
            "{svc} is filed under change ticket {ticket}.",
            "Change ticket {ticket} names relay profile {relay} as its sole owner.",
            "Relay profile {relay} {verb} send telemetry directly to the vendor.",
        ),
        {
            "easy": (
                "Telemetry dashboards refresh every hour.",
                "The vendor portal moved to a new address.",
                "Metrics retention was raised to ninety days.",
            ),
            "medium": (
                "A service may send telemetry directly after a privacy review.",
                "Staging services may not send telemetry directly.",
                "Telemetry a service sends directly is sampled heavily.",
                "May a new service send telemetry directly? Ask security.",
            ),
            "hard": (
                "The {other} service may send telemetry directly to the vendor.",
                "The {svc} service asked to send telemetry directly last week.",
                "Relay profile {relay} was audited for sending telemetry directly.",
            ),
        },
    ),
    "expense": Frames(  # c1, the approval rule, is the query-facing block: no Definition 1 pattern
        "Can project {proj} approve an expense of {amount} dollars?",
        (
            "Project {proj} can approve any expense up to {threshold} dollars without escalation.",
            "Project {proj} has {budget} dollars of budget remaining this quarter.",
        ),
        {
            "easy": (
                "Receipts are scanned into the finance portal.",
                "Quarterly planning begins in the second week.",
                "The finance office closes early on Fridays.",
                "Travel bookings go through the agency desk.",
                "Invoices are paid within thirty days.",
            ),
            "medium": (
                "Project {other} has {other_budget} dollars of budget remaining.",
                "An expense above the approval threshold needs a director.",
                "Project {other} can approve expenses up to {other_threshold} dollars.",
                "Expense approvals are logged in the finance portal.",
                "Each project can approve small expenses without escalation.",
                "Budget remaining is reported in dollars at quarter end.",
            ),
            "hard": (
                "Project {proj} asked whether it can approve an expense of {amount} dollars.",
                "Project {proj} approved an expense of {past_amount} dollars last year.",
                "Project {other} can approve any expense of {amount} dollars.",
                "Project {proj} had {past_budget} dollars of budget last quarter.",
                "Project {proj} may approve expenses once the audit closes.",
            ),
        },
    ),
    "threshold": Frames(  # c1, the limit, is the query-facing block: no Definition 1 pattern
        "Is the pressure on {unit} above its limit?",
        (
            "The pressure limit for {unit} is {limit} kilopascals.",
            "The latest pressure reading on {unit} is {reading} kilopascals.",
        ),
        {
            "easy": (
                "Gauges are recalibrated every spring.",
                "The plant floor map was redrawn in May.",
                "Maintenance crews rotate shifts at six.",
                "Spare valves are kept in cage four.",
                "Safety drills happen twice a year.",
            ),
            "medium": (
                "The pressure limit for {other} is {other_limit} kilopascals.",
                "The latest pressure reading on {other} is {other_reading} kilopascals.",
                "A reading above the pressure limit triggers an alarm.",
                "Pressure limits are reviewed by the plant engineer each quarter.",
                "Every {machine} logs its pressure reading hourly.",
                "Limits are stated in kilopascals on the control screen.",
            ),
            "hard": (
                "The pressure on {unit} was above its limit last month.",
                "The previous pressure limit for {unit} was {past_limit} kilopascals.",
                "An older pressure reading on {unit} was {past_reading} kilopascals.",
                "Is the pressure on {other} above its limit?",
                "Engineers asked whether {unit} runs above its limit.",
            ),
        },
    ),
}


def _draft(name: str, values: dict, yes: bool, facts: dict) -> Draft:
    query, chain, pools = FRAMES[name].write(values)
    return Draft(query, chain, pools, yes, facts)


def _target(name: str, draw: Draw, verbs: tuple[str, str], values: dict, links: tuple) -> Draft:
    """A target's draft: the verdict drawn last (allowed three times in four, `verbs` = (yes,
    no)), the chain's links named by their keys in `values`, the first the subject."""
    allowed = draw.below(4) != 0
    verb = verbs[0] if allowed else verbs[1]
    values = {**values, "verb": verb}
    facts = {"subject": values[links[0]], "links": [values[k] for k in links], "verdict": verb}
    return _draft(name, values, allowed, facts)


def role(draw: Draw, tier: str) -> Draft:
    """Target: user -> access bundle -> clearance -> may delete a production backup."""
    user, other = draw.sample(USERS, 2)
    bundle, clearance = draw.code(), draw.code("NPRSTVW", 1)
    values = {"user": user, "other": other, "bundle": bundle, "clearance": clearance}
    return _target("role", draw, ("allows", "forbids"), values, ("user", "bundle", "clearance"))


def profile(draw: Draw, tier: str) -> Draft:
    """Target: service -> route ticket -> relay profile -> may send telemetry directly."""
    svc, other = draw.sample(SERVICES, 2)
    ticket = f"RT-{100 + draw.below(900)}"
    relay = draw.code("PQRSXYZ", 2)
    values = {"svc": svc, "other": other, "ticket": ticket, "relay": relay}
    return _target("profile", draw, ("may", "may not"), values, ("svc", "ticket", "relay"))


def expense(draw: Draw, tier: str) -> Draft:
    """Control: a project's remaining budget and its approval threshold decide an expense."""
    proj, other = draw.sample(PROJECTS, 2)
    amount = 500 * (2 + draw.below(14))
    budget = 500 * (4 + draw.below(20))
    threshold = 500 * (2 + draw.below(14))
    allowed = amount <= budget and amount <= threshold
    values = {
        "proj": proj,
        "other": other,
        "amount": amount,
        "budget": budget,
        "threshold": threshold,
        "other_budget": budget + 1500,
        "other_threshold": threshold + 1000,
        "past_amount": amount + 250,
        "past_budget": budget + 2000,
    }
    facts = {"subject": proj, "amount": amount, "budget": budget, "threshold": threshold}
    return _draft("expense", values, allowed, facts)


def threshold(draw: Draw, tier: str) -> Draft:
    """Control: a named machine's reading against its own pressure limit."""
    machine = draw.choice(MACHINES)
    unit, other = f"{machine} {draw.code()}", f"{machine} {draw.code()}"
    limit = 10 * (5 + draw.below(20))
    reading = limit + 10 * (draw.below(9) - 4)
    values = {
        "machine": machine,
        "unit": unit,
        "other": other,
        "limit": limit,
        "reading": reading,
        "other_limit": limit + 20,
        "other_reading": reading - 10,
        "past_limit": limit + 30,
        "past_reading": reading + 40,
    }
    facts = {"subject": unit, "reading": reading, "limit": limit}
    return _draft("threshold", values, reading > limit, facts)


@dataclass(frozen=True)
class Template:
    """A benchmark template: its regime, chain depth, honeypot count and writer."""

    name: str
    regime: str
    depth: int
    honeypots: int
    write: Callable[[Draw, str], Draft]


TEMPLATES = {
    "expense": Template("expense", "control", 2, 4, expense),
    "threshold": Template("threshold", "control", 2, 4, threshold),
    "role": Template("role", "target", 3, 2, role),
    "profile": Template("profile", "target", 3, 2, profile),
}


def generate(template: str, seed: int, total_blocks: int = 20, tier: str = "medium") -> Scenario:
    """One scenario: chain c1..cK (c_{i+1} depends on c_i), honeypots h1.., fillers f1.., shuffled."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    if tier not in TIERS:
        raise ValueError(f"unknown honeypot tier {tier!r}; choose one of {', '.join(TIERS)}")
    t = TEMPLATES[template]
    minimum = t.depth + t.honeypots
    if total_blocks < minimum:
        raise ValueError(
            f"{template} needs at least {minimum} blocks (chain + honeypots), got {total_blocks}"
        )
    draw = Draw("workbench-v1", template, seed)
    draft = t.write(draw, tier)
    honeypots = draw.sample(draft.pools[tier], t.honeypots)
    blocks = [Block(f"c{i + 1}", text, "chain") for i, text in enumerate(draft.chain)]
    blocks += [Block(f"h{i + 1}", text, "honeypot") for i, text in enumerate(honeypots)]
    blocks += [
        Block(f"f{i + 1}", text, "filler")
        for i, text in enumerate(fillers(draw, total_blocks - len(blocks)))
    ]
    blocks = draw.shuffle(blocks)
    chain = tuple(f"c{i + 1}" for i in range(t.depth))
    edges = tuple((chain[i + 1], chain[i]) for i in range(t.depth - 1))
    meta = {"tier": tier, "total_blocks": total_blocks, "facts": draft.facts}
    return Scenario(
        f"{template}/seed={seed}/blocks={total_blocks}",
        draft.query,
        tuple(blocks),
        edges,
        chain,
        template,
        t.regime,
        seed,
        "yes" if draft.yes else "no",
        meta,
    )


def generate_many(
    templates: Sequence[str], seeds: Sequence[int], total_blocks: int = 20, tier: str = "medium"
) -> list[Scenario]:
    """Every template x seed, templates outer."""
    return [generate(t, s, total_blocks, tier) for t in templates for s in seeds]


def worked_example() -> Scenario:
    """The paper's section 2.2 example (Alice, bundle M, clearance N) in a six-block store.

    The three chain sentences are the paper's; the three competitors are ours: one shares the
    query's decisive words (a honeypot), two are ordinary blocks sharing a word or two.
    """
    blocks = (
        Block("c1", "Alice is assigned to backup bundle M", "chain"),
        Block("c2", "Bundle M maps to clearance N", "chain"),
        Block("c3", "Clearance N permits deletion of the encrypted backup.", "chain"),
        Block("h1", "The encrypted backup of the wiki finished overnight.", "honeypot"),
        Block("f1", "Alice booked the large room for the design review.", "filler"),
        Block("f2", "May the team delete old chat logs after the audit?", "filler"),
    )
    return Scenario(
        "worked-example",
        "May Alice delete the encrypted backup?",
        blocks,
        (("c3", "c2"), ("c2", "c1")),
        ("c1", "c2", "c3"),
        "worked",
        "target",
        None,
        "yes",
        {"facts": {"links": ["Alice", "M", "N"], "verdict": "permits"}},
    )
