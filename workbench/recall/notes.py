"""The recall notebook's prose (notebook 08), computed: each note takes the tables it speaks of
and says only what they show, so a re-run on other parameters says what that run found. The
recall room's one prose module."""

from __future__ import annotations

from workbench.recall import grid as R


def ceiling(grids: dict, n_cells: int) -> str:
    """The retention ceiling: selection never exceeds its row's retention rate."""
    holds = all(R.invariant_holds(g) for g in grids.values())
    g = grids["informative"]
    solved = [s for s in ("query", "dense", "oracle") if s in g.selection_rules]
    at_ceiling = [
        s.upper()
        for s in solved
        if all(abs(g.recall(r, s) - g.retention_rate(r)) < 1e-12 for r in g.retention_rules)
    ]
    text = (
        f"The retention ceiling {'holds in all' if holds else 'fails in some of the'} {n_cells} "
        f"cells: {'no' if holds else 'some'} selection rule exceeds its row's retention rate (it "
        "holds per query, since selection only ranks survivors). "
    )
    if at_ceiling:
        text += (
            f"Under informative queries {', '.join(at_ceiling)} reach the ceiling in every row: "
            "the query token-matches exactly one fact, so selection is solved whenever the target "
            "survived. That is the construction ceiling the paper describes, not a property of "
            "the selectors."
        )
    else:
        text += (
            "Under informative queries no query-aware selector reaches the ceiling in every row."
        )
    return text


def pressure(pressure_table, delays, density, K: int, top_k: int) -> str:
    """Memory pressure, delay and density, from the three tables."""
    p = pressure_table.query("retention == 'recency'")
    inert = sorted(int(k) for k, g in p.groupby("K") if g["recall"].nunique() == 1)
    d = delays.query("selection == 'query' and delay == '6-9'").set_index("retention")
    o = density.query("retention == 'type_oracle' and selection == 'query'").sort_values("density")
    parts = []
    if inert:
        parts.append(
            f"Under recency retention every selector ties at K = {', '.join(map(str, inert))} "
            f"(K <= k = {top_k} exposes every survivor)."
        )
    if "recency" in d.index and "unbounded" in d.index:
        parts.append(
            f"At delays 6-9 recency retention (K = {K}) keeps {d.loc['recency', 'retention_rate']:.1f}% "
            f"of targets, unbounded retention {d.loc['unbounded', 'retention_rate']:.1f}%."
        )
    if len(o) > 1:
        a, b = o.iloc[0], o.iloc[-1]
        parts.append(
            f"Type-oracle retention with query selection goes from {a['recall']:.1f}% recall at "
            f"density {a['density']:g} to {b['recall']:.1f}% at {b['density']:g}: dropping "
            "distractors first leaves more room for facts as there are more distractors to drop."
        )
    return " ".join(parts)


def construction_gap(expected, decomp, g_sd, paper_rq1, fit, longer, skewed) -> str:
    """Why our matched-access gain is what the stated construction gives, beside the paper's."""
    ours = decomp.set_index("component").loc["matched_access_gain", "pp"]
    paper_gain, paper_ret = paper_rq1["matched_access_gain"], paper_rq1["retention"]
    side = "below" if g_sd["paper_in_sd"] < 0 else "above"
    return (
        f"**Why ours is ~{expected['matched_access_gain']:.0f}.** Recency retention keeps the last "
        "K observations and recency selection shows the newest k, so both depend only on where "
        "the target sits. When distractor positions are drawn without regard to position and the "
        "target is uniform over the facts, every position holds the target with probability 1/N: "
        f"retention is K/N = {expected['retention']:.1f}% and the matched-access gain is (K-k)/N = "
        f"{expected['matched_access_gain']:.1f} pp, at every density. Ours, {ours:+.1f} pp, is a "
        f"draw from that: over {int(g_sd['seeds'])} seeds our gain is {g_sd['mean']:.1f} ± "
        f"{g_sd['sd']:.1f}, and {g_sd['seeds_as_far_as_paper_pct']:.1f}% of seeds come down to the "
        f"paper's {paper_gain:+.1f} (it sits {abs(g_sd['paper_in_sd']):.1f} sd {side} our mean). "
        f"A longer stream of 10 facts plus 3 distractors gives {fit.loc[longer, 'matched_access_gain']:+.1f} "
        f"with retention {fit.loc[longer, 'retention']:.1f}% (the paper: {paper_ret:.1f}%); a "
        "placement that puts distractors twice as often at positions 5-7 and half as often at 8-9 "
        f"gives {fit.loc[skewed, 'retention']:.1f}% / {fit.loc[skewed, 'matched_access_gain']:+.1f} "
        f"(the paper: {paper_ret:.1f}% / {paper_gain:+.1f}), but the seed does not describe such a "
        "placement. We did not tune our generator toward the paper's figures."
    )


def frequency(same_retention: bool, fr, repeats: int) -> str:
    """Frequency against recency, without and with restated facts."""
    verdict = (
        "keeps fewer targets than"
        if fr["diff_hi"] < 0
        else "keeps more targets than"
        if fr["diff_lo"] > 0
        else "is not distinguishable from"
    )
    return (
        f"Without restated facts frequency keeps {'exactly' if same_retention else 'not always'} "
        f"what recency keeps in every episode ({same_retention}). With {repeats} restated facts "
        f"per stream, frequency {verdict} recency: {fr['frequency_minus_recency']:+.1f} pp "
        f"[{fr['diff_lo']:+.1f}, {fr['diff_hi']:+.1f}]. The two copies of a restated fact share "
        "all their words, so frequency keeps both, while the queries ask about each distinct fact "
        "equally often."
    )


def dense_leak(tf: dict, du, paper) -> str:
    """How many distractors DENSE exposes under the uninformative query, by construction."""
    share = du.groupby(level=1)["exposed_distractor_share"].mean()
    kin = du.loc[("kin", "disjoint")]
    return (
        f"DENSE exposes distractors for {tf['exposed_distractor_share']:.1f}% of its items (base "
        f"rate {tf['distractor_base_rate']:.0f}%), and its own exposures predict "
        f"{tf['predicted_from_exposure']:.1f}% recall against {tf['recall']:.1f}% observed; a "
        f"selector that exposed no distractor would get {tf['predicted_by_type_filtering']:.1f}% "
        f"(the paper measured {paper['rq3']['dense_uninformative_recall']:.1f}%). How much leaks "
        f"depends on the construction: across the {du.index.get_level_values(0).nunique()} "
        f"vocabularies the distractor share averages {share['shared']:.1f}% with shared values "
        f"and {share['disjoint']:.1f}% with disjoint ones, and kin slots with disjoint values give "
        f"{kin['exposed_distractor_share']:.1f}% distractors and {kin['dense_recall']:.1f}% recall "
        "with the same MiniLM model: in these runs the leak follows the distractor vocabulary and "
        "the encoder together."
    )


def reader(accuracy, p4: dict) -> str:
    """The seed's reader beside ours (the oracle reader, unless a model is behind READER_URL)."""
    b = accuracy.set_index(["retention", "selection"]).loc[("recency", "query")]
    lo, hi = p4["conditional_accuracy_range"]
    text = (
        f"The seed's FLAN-T5-large reader recalled the target for {p4['bounded_recall']:.1f}% of "
        f"queries and answered {p4['answer_accuracy']:.1f}% correctly (accuracy given recall "
        f"{lo:.1f}-{hi:.1f}%, no memory {p4['no_memory_accuracy']:.1f}%). With the {b['reader']}, "
        f"our bounded agent retains {b['retention_rate']:.1f}% of targets, recalls "
        f"{b['recall']:.1f}% and answers {b['accuracy']:.1f}% (given recall "
        f"{b['accuracy_given_recall']:.1f}%, {int(accuracy['correct_without_recall'].sum())} "
        "answers right without recall). "
    )
    if "oracle" in str(b["reader"]):
        text += (
            "That accuracy equals recall is how the oracle reader is built; whether a real "
            "reader's accuracy is recall times a constant is the seed's claim, which this run "
            "cannot test: it needs a model behind `READER_URL`."
        )
    return text
