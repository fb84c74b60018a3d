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


def role(draw: Draw, tier: str) -> Draft:
    """Target: user -> access bundle -> clearance -> may delete a production backup."""
    user, other = draw.sample(USERS, 2)
    bundle, clearance = draw.code(), draw.code("NPRSTVW", 1)
    allowed = draw.below(4) != 0
    verb = "allows" if allowed else "forbids"
    query = f"May {user} delete the encrypted production backup?"
    chain = (
        f"{user} was placed in access bundle {bundle} for production backup work.",
        f"Bundle {bundle} maps onto clearance level {clearance} in our access directory.",
        f"Clearance {clearance} {verb} deleting the encrypted production backup.",
    )
    pools = {
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
            f"{other} may delete the encrypted production backup with clearance {clearance}.",
            f"{user} asked whether the encrypted production backup can be deleted.",
            f"Clearance {clearance} was reviewed for deleting the encrypted production backup.",
        ),
    }
    return Draft(
        query,
        chain,
        pools,
        allowed,
        {"subject": user, "links": [user, bundle, clearance], "verdict": verb},
    )


def profile(draw: Draw, tier: str) -> Draft:
    """Target: service -> route ticket -> relay profile -> may send telemetry directly.

    c1 shares only identifiers with the query (the service name), none of the decision vocabulary.
    """
    svc, other = draw.sample(SERVICES, 2)
    ticket = f"RT-{100 + draw.below(900)}"
    relay = draw.code("PQRSXYZ", 2)
    allowed = draw.below(4) != 0
    verb = "may" if allowed else "may not"
    query = f"May the {svc} service send telemetry directly?"
    chain = (
        f"{svc} is filed under change ticket {ticket}.",
        f"Change ticket {ticket} names relay profile {relay} as its sole owner.",
        f"Relay profile {relay} {verb} send telemetry directly to the vendor.",
    )
    pools = {
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
            f"The {other} service may send telemetry directly to the vendor.",
            f"The {svc} service asked to send telemetry directly last week.",
            f"Relay profile {relay} was audited for sending telemetry directly.",
        ),
    }
    return Draft(
        query,
        chain,
        pools,
        allowed,
        {"subject": svc, "links": [svc, ticket, relay], "verdict": verb},
    )


def expense(draw: Draw, tier: str) -> Draft:
    """Control: a project's remaining budget and its approval threshold decide an expense."""
    proj, other = draw.sample(PROJECTS, 2)
    amount = 500 * (2 + draw.below(14))
    budget = 500 * (4 + draw.below(20))
    threshold = 500 * (2 + draw.below(14))
    allowed = amount <= budget and amount <= threshold
    query = f"Can project {proj} approve an expense of {amount} dollars?"
    chain = (  # c1, the approval rule, is the query-facing block: no Definition 1 pattern
        f"Project {proj} can approve any expense up to {threshold} dollars without escalation.",
        f"Project {proj} has {budget} dollars of budget remaining this quarter.",
    )
    pools = {
        "easy": (
            "Receipts are scanned into the finance portal.",
            "Quarterly planning begins in the second week.",
            "The finance office closes early on Fridays.",
            "Travel bookings go through the agency desk.",
            "Invoices are paid within thirty days.",
        ),
        "medium": (
            f"Project {other} has {budget + 1500} dollars of budget remaining.",
            "An expense above the approval threshold needs a director.",
            f"Project {other} can approve expenses up to {threshold + 1000} dollars.",
            "Expense approvals are logged in the finance portal.",
            "Each project can approve small expenses without escalation.",
            "Budget remaining is reported in dollars at quarter end.",
        ),
        "hard": (
            f"Project {proj} asked whether it can approve an expense of {amount} dollars.",
            f"Project {proj} approved an expense of {amount + 250} dollars last year.",
            f"Project {other} can approve any expense of {amount} dollars.",
            f"Project {proj} had {budget + 2000} dollars of budget last quarter.",
            f"Project {proj} may approve expenses once the audit closes.",
        ),
    }
    return Draft(
        query,
        chain,
        pools,
        allowed,
        {"subject": proj, "amount": amount, "budget": budget, "threshold": threshold},
    )


def threshold(draw: Draw, tier: str) -> Draft:
    """Control: a named machine's reading against its own pressure limit."""
    machine = draw.choice(MACHINES)
    unit, other = f"{machine} {draw.code()}", f"{machine} {draw.code()}"
    limit = 10 * (5 + draw.below(20))
    reading = limit + 10 * (draw.below(9) - 4)
    over = reading > limit
    query = f"Is the pressure on {unit} above its limit?"
    chain = (  # c1, the limit, is the query-facing block: no Definition 1 pattern
        f"The pressure limit for {unit} is {limit} kilopascals.",
        f"The latest pressure reading on {unit} is {reading} kilopascals.",
    )
    pools = {
        "easy": (
            "Gauges are recalibrated every spring.",
            "The plant floor map was redrawn in May.",
            "Maintenance crews rotate shifts at six.",
            "Spare valves are kept in cage four.",
            "Safety drills happen twice a year.",
        ),
        "medium": (
            f"The pressure limit for {other} is {limit + 20} kilopascals.",
            f"The latest pressure reading on {other} is {reading - 10} kilopascals.",
            "A reading above the pressure limit triggers an alarm.",
            "Pressure limits are reviewed by the plant engineer each quarter.",
            f"Every {machine} logs its pressure reading hourly.",
            "Limits are stated in kilopascals on the control screen.",
        ),
        "hard": (
            f"The pressure on {unit} was above its limit last month.",
            f"The previous pressure limit for {unit} was {limit + 30} kilopascals.",
            f"An older pressure reading on {unit} was {reading + 40} kilopascals.",
            f"Is the pressure on {other} above its limit?",
            f"Engineers asked whether {unit} runs above its limit.",
        ),
    }
    return Draft(query, chain, pools, over, {"subject": unit, "reading": reading, "limit": limit})


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
