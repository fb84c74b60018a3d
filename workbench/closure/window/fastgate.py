"""The gate's replay of a whole log, compiled (numba): the gate's rule (`rule`: the proposal,
its margin, the decision, compiled from the same source `GatedManager` runs) in one loop over
arrays instead of one Python call per span and per cycle.

`managers.replay` takes this path for a fresh gate in its default configuration (closure
enforced, mode 'throttle', not strict) over a log of `managers.COMPILED_MIN` spans or more, when
numba is installed (`managers.compiled`), and the Python manager's loop otherwise;
`tests/closure/test_fastgate.py` checks that both give the same cycles, window, held spans and
over-budget turns, byte for byte, on logs with pins, supplied scores, tombstones, repairs and
throttles, and that a manager replayed here goes on (add, step) exactly as one replayed in Python.

Where the Python manager keeps its counts as the window changes, the kernel recounts them over
the retained window at each cycle: the window is small (its capacity, and what closure pins),
and in compiled code a pass over it costs less than the bookkeeping. Handles are ranks in their
sorted order, so a sorted list of ranks is the sorted list of names.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from itertools import chain

import numpy as np

from workbench.closure.window.cycle import Cycle
from workbench.closure.window.rule import (
    DECISIONS,
    decision_code,
    prefix_margin,
    proposal_length,
    throttled,
)


def available() -> bool:
    """numba is installed (a dependency; without it the Python loop runs). Not imported here:
    importing it takes about 0.7 s, paid only by a replay that runs compiled."""
    return importlib.util.find_spec("numba") is not None


def _grow(a, k):
    """`a` (int64), or a copy twice as long, so that a[k] can be written."""
    if k < len(a):
        return a
    b = np.empty(2 * len(a) + 16, np.int64)
    b[: len(a)] = a
    return b


def _sift(a, score, root, end, by_score):
    """Heap step of `_sort_int` / `_sort_order` (no numpy sort: it would triple the compile)."""
    while True:
        child = 2 * root + 1
        if child > end:
            return
        if child + 1 <= end and _before(a[child], a[child + 1], score, by_score):
            child += 1
        if _before(a[root], a[child], score, by_score):
            a[root], a[child] = a[child], a[root]
            root = child
        else:
            return


def _before(x, y, score, by_score):
    if not by_score:
        return x < y
    return score[x] < score[y] or (score[x] == score[y] and x > y)


def _heapsort(a, score, by_score):
    n = len(a)
    for start in range((n - 2) // 2, -1, -1):
        _sift(a, score, start, n - 1, by_score)
    for end in range(n - 1, 0, -1):
        a[0], a[end] = a[end], a[0]
        _sift(a, score, 0, end - 1, by_score)


def _sort_int(a):
    """Sort an int64 array (a view) in place, ascending."""
    _heapsort(a, np.zeros(0), False)


def _sort_order(a, score):
    """Sort positions in place in the relevance order: score ascending, among equal scores the
    later position first (the order `RelevanceManager._ord` keeps)."""
    _heapsort(a, score, True)


def _orphans(rlist, rcnt, skip, rptr, ridx, dptr, didx, cnt_n, cnt_d, hseen, touched, out, o0):
    """Write to out[o0:], sorted, the handles that the retained spans not in `skip` name and none
    of them defines (nor tombstones); returns (out, its new end, touched), the counts reset."""
    nt = 0
    for k in range(rcnt):
        i = rlist[k]
        if skip[i]:
            continue
        for kk in range(rptr[i], rptr[i + 1]):
            cnt_n[ridx[kk]] += 1
        for kk in range(dptr[i], dptr[i + 1]):
            cnt_d[didx[kk]] += 1
        for idx, lo, hi in ((ridx, rptr[i], rptr[i + 1]), (didx, dptr[i], dptr[i + 1])):
            for kk in range(lo, hi):
                h = idx[kk]
                if not hseen[h]:
                    hseen[h] = True
                    touched = _grow(touched, nt)
                    touched[nt] = h
                    nt += 1
    o1 = o0
    for k in range(nt):
        h = touched[k]
        if cnt_n[h] > 0 and cnt_d[h] == 0:
            out = _grow(out, o1)
            out[o1] = h
            o1 += 1
        cnt_n[h] = 0
        cnt_d[h] = 0
        hseen[h] = False
    _sort_int(out[o0:o1])
    return out, o1, touched


def _replay(
    cost, unit, nptr, nidx, rptr, ridx, dptr, didx, pin, score, starts, turns, nh,
    capacity, trigger, cut_target, threshold, floor,
):  # fmt: skip
    n = len(cost)
    ret = np.zeros(n, np.bool_)
    held = np.zeros(n, np.bool_)
    rlist = np.empty(n, np.int64)  # the retained positions, unordered
    rpos = np.full(n, -1, np.int64)
    rcnt, used = 0, 0
    in_p = np.zeros(n, np.bool_)  # in the proposal
    in_c = np.zeros(n, np.bool_)  # in the commit
    mark = np.zeros(n, np.bool_)  # proposed, not committed
    needed = np.zeros(n, np.bool_)  # ... and needed by a retained span
    cnt_n = np.zeros(nh, np.int64)  # scratch: spans naming a handle
    cnt_d = np.zeros(nh, np.int64)  # scratch: spans defining or tombstoning it
    hseen = np.zeros(nh, np.bool_)
    touched = np.empty(16, np.int64)
    ucnt = np.zeros(n, np.int64)  # scratch per unit: retained members, best score, pins, ...
    ubest = np.zeros(n)
    ufix = np.zeros(n, np.int64)
    ustart = np.zeros(n, np.int64)
    nb = np.zeros(n, np.int64)
    left = np.zeros(n, np.int64)
    astart = np.zeros(n, np.int64)
    alen = np.zeros(n, np.int64)
    stack = np.empty(16, np.int64)
    cand = np.empty(n, np.int64)
    heap = np.empty(n, np.int64)
    # outputs: per cycle, and the positions / ranks of each cycle as (ptr, values)
    nc = 0
    ng = len(starts) - 1  # turns: at most one cycle and one over-budget record each
    c_turn = np.empty(ng, np.int64)
    c_ub = np.empty(ng, np.int64)
    c_ua = np.empty(ng, np.int64)
    c_marg = np.empty(ng)
    c_hasm = np.empty(ng, np.bool_)
    c_thr = np.empty(ng, np.bool_)
    c_dec = np.empty(ng, np.int64)
    c_over = np.empty(ng, np.int64)
    ev_ptr = np.zeros(ng + 1, np.int64)
    ev = np.empty(16, np.int64)
    po_ptr = np.zeros(ng + 1, np.int64)
    po = np.empty(16, np.int64)
    or_ptr = np.zeros(ng + 1, np.int64)
    orr = np.empty(16, np.int64)
    pi_ptr = np.zeros(ng + 1, np.int64)
    pi = np.empty(16, np.int64)
    nob = 0
    ob_turn = np.empty(ng, np.int64)
    ob_over = np.empty(ng, np.int64)

    for g in range(len(starts) - 1):
        s0, s1 = starts[g], starts[g + 1]
        turn = turns[s0]
        nnow = s1  # spans added so far: a call's later answers are not among its needs yet
        for i in range(s0, s1):  # the turn's spans enter the window
            ret[i] = True
            used += cost[i]
            rpos[i] = rcnt
            rlist[rcnt] = i
            rcnt += 1
        # re-admit what the new spans need (a binding evicted earlier), depth first
        ns = 0
        for i in range(s0, s1):
            stack = _grow(stack, ns)
            stack[ns] = i
            ns += 1
        while ns > 0:
            ns -= 1
            i = stack[ns]
            for k in range(nptr[i], nptr[i + 1]):
                p = nidx[k]
                if p < nnow and not ret[p]:
                    ret[p] = True
                    used += cost[p]
                    rpos[p] = rcnt
                    rlist[rcnt] = p
                    rcnt += 1
                    held[p] = True
                    stack = _grow(stack, ns)
                    stack[ns] = p
                    ns += 1
        if used > trigger:
            used_before = used
            # the relevance proposal: unpinned spans by (score, later first), a prefix
            m = 0
            for k in range(rcnt):
                i = rlist[k]
                if not pin[i]:
                    cand[m] = i
                    m += 1
            o = cand[:m].copy()
            _sort_order(o, score)
            nprop = proposal_length(o, score, cost, used - cut_target, used - capacity, threshold)
            hasm, margin = prefix_margin(o, score, nprop)
            for k in range(nprop):
                in_p[o[k]] = True
            # the handles the window less the proposal names and does not define
            po, p0, touched = _orphans(
                rlist, rcnt, in_p, rptr, ridx, dptr, didx, cnt_n, cnt_d, hseen, touched, po,
                po_ptr[nc],
            )  # fmt: skip
            throttle = throttled(hasm, margin, floor)
            # a proposed span that a span the proposal keeps needs
            dangling = False
            for k in range(rcnt):
                q = rlist[k]
                if in_p[q]:
                    continue
                for kk in range(nptr[q], nptr[q + 1]):
                    p = nidx[kk]
                    if p < nnow and in_p[p]:
                        dangling = True
                        break
                if dangling:
                    break
            ncommit = 0
            commit = cand  # reused: the proposal is `o`, a copy
            dec = decision_code(dangling, throttle)
            if dec == 0:
                for k in range(nprop):
                    commit[k] = o[k]
                ncommit = nprop
            else:
                cut = capacity if throttle else cut_target
                ncommit = _greedy(
                    used - cut, used - capacity, rlist, rcnt, unit, score, pin, cost, nptr,
                    nidx, nnow, ret, threshold, ucnt, ubest, ufix, ustart, nb, left, astart,
                    alen, heap, commit,
                )  # fmt: skip
            for k in range(ncommit):
                i = commit[k]
                in_c[i] = True
                ret[i] = False
                used -= cost[i]
                held[i] = False
                j = rpos[i]
                last = rlist[rcnt - 1]
                rlist[j] = last
                rpos[last] = j
                rpos[i] = -1
                rcnt -= 1
            e0 = ev_ptr[nc]
            for k in range(ncommit):
                ev = _grow(ev, e0 + k)
                ev[e0 + k] = commit[k]
            _sort_int(ev[e0 : e0 + ncommit])
            # kept against the proposal: proposed, not committed, needed by a retained span
            for k in range(nprop):
                if not in_c[o[k]]:
                    mark[o[k]] = True
            for k in range(rcnt):
                q = rlist[k]
                for kk in range(nptr[q], nptr[q + 1]):
                    p = nidx[kk]
                    if p < nnow and mark[p]:
                        needed[p] = True
            x0 = pi_ptr[nc]
            for k in range(nprop):
                p = o[k]
                if needed[p]:
                    held[p] = True
                    pi = _grow(pi, x0)
                    pi[x0] = p
                    x0 += 1
                mark[p] = False
                needed[p] = False
            _sort_int(pi[pi_ptr[nc] : x0])
            # the orphans after the commit: the proposal's, if it was committed as proposed
            same = ncommit == nprop
            if same:
                for k in range(ncommit):
                    if not in_p[commit[k]]:
                        same = False
                        break
            r0 = or_ptr[nc]
            if same:
                for k in range(po_ptr[nc], p0):
                    orr = _grow(orr, r0)
                    orr[r0] = po[k]
                    r0 += 1
            else:  # the window as committed (in_c is off on every retained span)
                orr, r0, touched = _orphans(
                    rlist, rcnt, in_c, rptr, ridx, dptr, didx, cnt_n, cnt_d, hseen, touched, orr,
                    r0,
                )  # fmt: skip
            for k in range(nprop):
                in_p[o[k]] = False
            for k in range(ncommit):
                in_c[commit[k]] = False
            c_turn[nc] = turn
            c_ub[nc] = used_before
            c_ua[nc] = used
            c_marg[nc] = margin
            c_hasm[nc] = hasm
            c_thr[nc] = throttle
            c_dec[nc] = dec
            c_over[nc] = max(used - capacity, 0)
            nc += 1
            ev_ptr[nc] = e0 + ncommit
            po_ptr[nc] = p0
            or_ptr[nc] = r0
            pi_ptr[nc] = x0
        if used - capacity > 0:
            ob_turn[nob] = turn
            ob_over[nob] = used - capacity
            nob += 1
    return (
        ret, held,
        c_turn[:nc], c_ub[:nc], c_ua[:nc], c_marg[:nc], c_hasm[:nc], c_thr[:nc], c_dec[:nc],
        c_over[:nc], ev_ptr[: nc + 1], ev, po_ptr[: nc + 1], po, or_ptr[: nc + 1], orr,
        pi_ptr[: nc + 1], pi, ob_turn[:nob], ob_over[:nob],
    )  # fmt: skip


def _greedy(
    need_soft, need_hard, rlist, rcnt, unit, score, pin, cost, nptr, nidx, nnow, ret,
    threshold, ucnt, ubest, ufix, ustart, nb, left, astart, alen, heap, out,
):  # fmt: skip
    """`GatedManager._greedy` over the retained window: units (a call with its binding answer)
    lowest best-member score first (ties: the lower unit), a unit evictable once no retained
    unit outside it needs a member; writes the evicted positions to `out`, returns how many."""
    if max(need_soft, need_hard) <= 0:
        return 0
    goal = max(need_soft, need_hard)
    n = len(unit)
    mem = np.empty(rcnt, np.int64)  # the retained positions grouped by unit
    for k in range(rcnt):
        mem[k] = unit[rlist[k]] * n + rlist[k]
    _sort_int(mem)
    for k in range(rcnt):
        mem[k] = mem[k] % n
    nu = 0
    ulist = np.empty(rcnt, np.int64)
    for k in range(rcnt):
        i = mem[k]
        u = unit[i]
        if ucnt[u] == 0:
            ulist[nu] = u
            nu += 1
            ustart[u] = k
            ubest[u] = score[i]
        elif score[i] > ubest[u]:
            ubest[u] = score[i]
        ucnt[u] += 1
        if pin[i]:
            ufix[u] += 1
    # distinct (needer unit, needed unit) links between retained units, sorted
    keys = np.empty(16, np.int64)
    nk = 0
    for k in range(rcnt):
        q = rlist[k]
        uq = unit[q]
        for kk in range(nptr[q], nptr[q + 1]):
            p = nidx[kk]
            if p < nnow and ret[p] and unit[p] != uq:
                keys = _grow(keys, nk)
                keys[nk] = uq * n + unit[p]
                nk += 1
    _sort_int(keys[:nk])
    nl = 0
    for k in range(nk):
        if nl == 0 or keys[k] != keys[nl - 1]:
            keys[nl] = keys[k]
            nl += 1
    links = keys[:nl]
    for k in range(len(links)):
        u, v = links[k] // n, links[k] % n
        nb[v] += 1
        if alen[u] == 0:
            astart[u] = k
        alen[u] += 1
    nhp = 0
    for k in range(nu):
        u = ulist[k]
        left[u] = nb[u]
        if nb[u] == 0 and ufix[u] == 0:
            heap[nhp] = u
            nhp += 1
    nout, freed = 0, 0
    while nhp > 0 and freed < goal:
        b = 0
        for k in range(1, nhp):
            u, w = heap[k], heap[b]
            if ubest[u] < ubest[w] or (ubest[u] == ubest[w] and u < w):
                b = k
        u = heap[b]
        nhp -= 1
        heap[b] = heap[nhp]
        if freed >= need_hard and ubest[u] >= threshold:
            break
        for k in range(ustart[u], ustart[u] + ucnt[u]):
            out[nout] = mem[k]
            nout += 1
            freed += cost[mem[k]]
        for k in range(astart[u], astart[u] + alen[u]):
            v = links[k] % n
            left[v] -= 1
            if left[v] == 0 and ufix[v] == 0:
                heap[nhp] = v
                nhp += 1
    for k in range(nu):
        u = ulist[k]
        ucnt[u] = 0
        ufix[u] = 0
        nb[u] = 0
        alen[u] = 0
    return nout


# the loop's own functions, and the gate's rule (`rule`), compiled from the same source the
# Python managers run
_COMPILED = ("_grow", "_before", "_sift", "_heapsort", "_sort_int", "_sort_order", "_greedy",
             "_orphans", "proposal_length", "prefix_margin", "throttled", "decision_code",
             "_replay")  # fmt: skip
_jit_lock = threading.Lock()


def _jit() -> None:
    """Wrap the loop's functions with numba (once per process; each compiles on its first call,
    or loads from numba's cache beside this module)."""
    g = globals()
    with _jit_lock:
        if hasattr(g["_replay"], "py_func"):
            return
        from numba import njit

        for name in _COMPILED:
            g[name] = njit(cache=True)(g[name])


def _csr(rows) -> tuple[np.ndarray, np.ndarray]:
    """(pointers, values) of a list of int sequences."""
    ptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, rows), np.int64, len(rows)), out=ptr[1:])
    return ptr, np.fromiter(chain.from_iterable(rows), np.int64, int(ptr[-1]))


def _ranked(sets, rank) -> list[tuple[int, ...]]:
    """Each handle set as the ranks of its handles (a log repeats its sets: each ranked once)."""
    memo: dict[frozenset, tuple[int, ...]] = {}
    out = []
    for r in sets:
        t = memo.get(r)
        if t is None:
            t = memo[r] = tuple(rank[h] for h in r)
        out.append(t)
    return out


def replay(manager, spans, emb, sims) -> None:
    """Replay `spans` (grouped into turns as `managers.replay` groups them) through a fresh
    `GatedManager` in the compiled loop, then leave the manager as the Python loop would have:
    its index, scores, window, held spans, cycles and over-budget turns, and the counts it keeps
    (rebuilt from the window), so that it can go on span by span."""
    _jit()
    m, index = manager, manager.index
    n = len(spans)
    m._emb = np.asarray(emb, dtype=np.float64)  # the manager is fresh: its rows are these
    if len(index) != n:  # `managers.replay` indexes the log while numba loads
        index.extend(spans)
    m.score = [s.score if s.score is not None else v for s, v in zip(spans, sims, strict=True)]
    m._version = [-1 if s.score is not None else m._goal_version for s in spans]
    pins = [i for i, s in enumerate(spans) if s.pinned or s.role == "tombstone"]
    m.pins.update(pins)
    m.tombstones.update(i for i, s in enumerate(spans) if s.role == "tombstone")
    distinct = set(index.refs).union(index.defs, index.tombs)
    names = sorted(set().union(*distinct))
    rank = {h: k for k, h in enumerate(names)}
    nptr, nidx = _csr(index.needs)
    rptr, ridx = _csr(_ranked(index.refs, rank))
    defs = _ranked(index.defs, rank)
    if any(index.tombs):
        defs = [d + t for d, t in zip(defs, _ranked(index.tombs, rank), strict=True)]
    dptr, didx = _csr(defs)
    pin = np.zeros(n, np.bool_)
    pin[pins] = True
    turns = np.fromiter((s.turn for s in spans), np.int64, n)
    starts = np.flatnonzero(np.r_[True, turns[1:] != turns[:-1], True])
    out = _replay(
        np.asarray(index.cost, np.int64), np.asarray(index.unit, np.int64), nptr, nidx, rptr,
        ridx, dptr, didx, pin, np.asarray(m.score, np.float64), starts, turns, len(names),
        int(m.capacity), float(m.trigger()), int(m.target * m.capacity), float(m.threshold),
        float(m.floor),
    )  # fmt: skip
    ret, held, turn, ub, ua, marg, hasm, thr, dec, over = out[:10]
    ev_ptr, ev, po_ptr, po, or_ptr, orr, pi_ptr, pi, ob_turn, ob_over = out[10:]
    for i in np.flatnonzero(ret).tolist():  # the counts the manager keeps, from its window
        m._enter(i)
    m.held = set(np.flatnonzero(held).tolist())
    ids = np.array([s.id for s in spans], dtype=object)
    hs = np.array(names, dtype=object)
    # each cycle's spans and handles as names, from one flat list each (slices, not lookups)
    ev, po, orr, pi = (
        names_of[x[: p[-1]]].tolist()
        for names_of, x, p in ((ids, ev, ev_ptr), (hs, po, po_ptr), (hs, orr, or_ptr), (ids, pi, pi_ptr))
    )  # fmt: skip
    ev_ptr, po_ptr, or_ptr, pi_ptr = (x.tolist() for x in (ev_ptr, po_ptr, or_ptr, pi_ptr))
    marg, hasm, thr = marg.tolist(), hasm.tolist(), thr.tolist()
    m.cycles.extend(
        Cycle(
            t,
            b,
            a,
            tuple(ev[ev_ptr[k] : ev_ptr[k + 1]]),
            marg[k] if hasm[k] else None,
            tuple(po[po_ptr[k] : po_ptr[k + 1]]),
            tuple(orr[or_ptr[k] : or_ptr[k + 1]]),
            tuple(pi[pi_ptr[k] : pi_ptr[k + 1]]),
            (),
            thr[k],
            DECISIONS[d],
            o,
        )  # fmt: skip
        for k, (t, b, a, d, o) in enumerate(
            zip(turn.tolist(), ub.tolist(), ua.tolist(), dec.tolist(), over.tolist(), strict=True)
        )
    )
    m.over_budget.extend(zip(ob_turn.tolist(), ob_over.tolist(), strict=True))


def load() -> None:
    """Load the compiled loop (from numba's cache, or compiling it) by running it on one span:
    `managers.replay` calls this from a thread while it encodes and indexes the log. The
    arguments have the types `replay` passes, so that no other version is compiled."""
    _jit()
    one, ptr, empty = np.zeros(1, np.int64), np.zeros(2, np.int64), np.zeros(0, np.int64)
    _replay(
        one + 1, one, ptr, empty, ptr, empty, ptr, empty, np.zeros(1, np.bool_), np.zeros(1),
        np.array([0, 1], np.int64), one, 0, 10, 7.8, 6, 0.35, 0.03,
    )  # fmt: skip


if __name__ == "__main__":  # scripts/setup_env.sh: compile once, so that no command pays it
    if not available():
        print("!! numba is not installed: the closure gate replays in Python (slower)")
    else:
        t0 = time.perf_counter()
        load()
        print(f">> the closure gate's compiled replay is ready ({time.perf_counter() - t0:.1f} s)")
