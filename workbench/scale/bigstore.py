"""Large stores: N blocks (10^2 .. 10^6) holding many chains of the four templates, each with
fresh entities, among honeypots and fillers, in one store that every chain's query retains from.

A store is a folder:
- `store.jsonl` (format `workbench-store/1`, written and read line by line): a header line, then
  one line per block in store order, one per edge (`[dependent, prerequisite]`), one per query;
- `lexical.npy` (float32, N x 256, exactly LexicalEncoder's rows) and `lexical.queries.npy`,
  written chunk by chunk and read memory-mapped; `embed_store` adds `sentence.npy` the same way.

Draws are a counter-based hash (`seeds.Stream`: splitmix64 of a SHA-256 stream key plus a
counter) in numpy integer arithmetic: a seed gives the same bytes on every machine and numpy
version. What a store holds is drawn in `workbench.scale.layout`; this module writes, reads and
retains from it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.common.encoders import LEXICAL_DIM, get_encoder
from workbench.common.io import InputError, UniqueIds, atomic_path, read_jsonl
from workbench.common.sweep import chunks, run_tasks
from workbench.dsgc.policies import PolicySetting
from workbench.dsgc.scenario import KINDS, Block, Scenario
from workbench.scale.layout import (
    MAX_SLOTS,
    STORE_TEMPLATES,
    Layout,
    layout,
    lexical_rows,
    render,
)

FORMAT = "workbench-store/1"
CHUNK = 1 << 16  # blocks per write chunk: memory stays flat whatever N is


class StoreError(InputError):
    """A store file is malformed."""


def write_store(lay: Layout, out_dir, chunk: int = CHUNK) -> Path:
    """store.jsonl, lexical.npy and lexical.queries.npy in `out_dir`, streamed chunk by chunk;
    each file appears whole or not at all."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n = lay.n
    head = {
        "format": FORMAT,
        "id": f"store/seed={lay.seed}/blocks={n}",
        "seed": lay.seed,
        "blocks": n,
        "edges": len(lay.edges),
        "queries": len(lay.queries),
    }
    with (
        atomic_path(out / "lexical.npy", suffix=".npy") as npy,
        atomic_path(out / "store.jsonl") as jsonl,
    ):
        emb = np.lib.format.open_memmap(npy, mode="w+", dtype=np.float32, shape=(n, LEXICAL_DIM))
        with open(jsonl, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps(head) + "\n")
            for a, b in chunks(0, n, chunk):
                idx = lay.order[a:b]
                fr, sl = lay.frame[idx], lay.slots[idx]
                texts = render(fr, sl)
                names, kinds = lay.names(idx), lay.kind[idx].tolist()
                fh.write(
                    "".join(
                        f'{{"block": {_json_str(i)}, "text": {_json_str(t)}, "kind": "{KINDS[k]}"}}\n'
                        for i, t, k in zip(names, texts, kinds, strict=True)
                    )
                )
                emb[a:b] = lexical_rows(fr, sl)
            at = lay.order  # pre-shuffle index at each store position
            for a, b in chunks(0, len(lay.edges), chunk):
                deps = lay.names(at[lay.edges[a:b, 0]])
                pres = lay.names(at[lay.edges[a:b, 1]])
                fh.write(
                    "".join(
                        f'{{"edge": [{_json_str(d)}, {_json_str(p)}]}}\n'
                        for d, p in zip(deps, pres, strict=True)
                    )
                )
            qframes = np.array([q[2] for q in lay.queries], dtype=np.int64)
            qslots = np.array([q[3] for q in lay.queries], dtype=np.int64).reshape(-1, MAX_SLOTS)
            links = [c for q in lay.queries for c in q[4]]
            names = iter(map(_json_str, lay.names(np.array(links, dtype=np.int64))))
            lines = []
            for (qid, tname, _, _, chain), text in zip(
                lay.queries, render(qframes, qslots), strict=True
            ):
                ids = ", ".join(next(names) for _ in chain)
                lines.append(
                    f'{{"query": {_json_str(text)}, "id": {_json_str(qid)}, "template": "{tname}", '
                    f'"regime": "{STORE_TEMPLATES[tname].regime}", "chain": [{ids}]}}\n'
                )
            fh.write("".join(lines))
        emb.flush()
        del emb
        qrows = lexical_rows(qframes, qslots)
        with atomic_path(out / "lexical.queries.npy", suffix=".npy") as qnpy:
            np.save(qnpy, qrows)
    return out


def generate_store(
    n_blocks: int, out_dir, seed: int = 0, per_chain: int = 20, extra_edges: int = 0
) -> Path:
    """Draw and write a store of n_blocks (see `layout` and `write_store`)."""
    return write_store(layout(n_blocks, seed, per_chain, extra_edges), out_dir)


# --- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Store:
    """A store read back: ids, texts, kinds, costs and edges in store order, and the queries."""

    path: Path
    header: dict
    ids: list
    texts: list
    kinds: list
    costs: np.ndarray
    edges: np.ndarray  # (E, 2) store positions
    queries: pd.DataFrame  # id, query, template, regime, chain (ids), chain_pos (positions)

    def embeddings(self, encoder: str = "lexical") -> tuple[np.ndarray, np.ndarray]:
        """(blocks, queries) rows of an encoder, memory-mapped from the .npy files."""
        blocks = np.load(self.path / f"{encoder}.npy", mmap_mode="r")
        queries = np.load(self.path / f"{encoder}.queries.npy", mmap_mode="r")
        if blocks.shape[0] != len(self.ids) or queries.shape[0] != len(self.queries):
            raise StoreError(f"{encoder}.npy does not match the store's blocks", path=self.path)
        return blocks, queries

    def scenario(self, query_id: str) -> Scenario:
        """One query over the whole store in the scenario format (validated like any other)."""
        q = self.queries.set_index("id").loc[query_id]
        blocks = tuple(
            Block(i, t, k) for i, t, k in zip(self.ids, self.texts, self.kinds, strict=True)
        )
        edges = tuple((self.ids[d], self.ids[p]) for d, p in self.edges.tolist())
        return Scenario(
            f"{self.header['id']}/{query_id}", q["query"], blocks, edges, tuple(q["chain"]),
            q["template"], q["regime"], self.header.get("seed"),
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"Store({self.header['id']}, {len(self.ids)} blocks, {len(self.edges)} edges, {len(self.queries)} queries)"


def read_store(path) -> Store:
    """Read store.jsonl line by line, checking it as strictly as a scenario file (unique ids,
    edges and chains naming known blocks, the header's counts); errors name file, line, field."""
    folder = Path(path)
    file = folder / "store.jsonl" if folder.is_dir() else folder
    folder = file.parent
    rows = read_jsonl(file, StoreError)
    try:
        _, head = next(rows)
    except StopIteration:
        raise StoreError("empty store file", path=file) from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise StoreError(
            f"the first line must be a {FORMAT} header", path=file, line=1, field="format"
        )
    ids, texts, kinds, edges, queries = [], [], [], [], []
    seen = UniqueIds("block", StoreError, file)
    qids = UniqueIds("query", StoreError, file)
    for line, obj in rows:
        if not isinstance(obj, dict):
            raise StoreError("expected a JSON object", path=file, line=line)
        if "block" in obj:
            if queries or edges:
                raise StoreError("blocks come before edges and queries", path=file, line=line)
            for key in ("block", "text"):
                if not isinstance(obj.get(key), str) or not obj[key].strip():
                    raise StoreError("must be a non-empty string", path=file, line=line, field=key)
            seen.add(obj["block"], line, "block")
            ids.append(obj["block"])
            texts.append(obj["text"])
            kinds.append(obj.get("kind", "filler"))
        elif "edge" in obj:
            e = obj["edge"]
            if not (isinstance(e, list) and len(e) == 2 and all(x in seen.seen for x in e)):
                raise StoreError(
                    "must be a [dependent, prerequisite] pair of known block ids",
                    path=file,
                    line=line,
                    field="edge",
                )
            if e[0] == e[1]:
                raise StoreError(f"self-loop on {e[0]!r}", path=file, line=line, field="edge")
            edges.append(e)
        elif "query" in obj:
            for key in ("query", "id"):
                if not isinstance(obj.get(key), str) or not obj[key].strip():
                    raise StoreError("must be a non-empty string", path=file, line=line, field=key)
            chain = obj.get("chain")
            if not isinstance(chain, list) or not chain or not all(c in seen.seen for c in chain):
                raise StoreError(
                    "must be a non-empty list of known block ids",
                    path=file,
                    line=line,
                    field="chain",
                )
            qids.add(obj["id"], line)
            queries.append(obj)
        else:
            raise StoreError("expected a block, edge or query line", path=file, line=line)
    for key, got in (("blocks", len(ids)), ("edges", len(edges)), ("queries", len(queries))):
        if head.get(key) != got:
            raise StoreError(
                f"header says {head.get(key)} {key}, the file holds {got}",
                path=file,
                line=1,
                field=key,
            )
    pos = {b: i for i, b in enumerate(ids)}
    edge_pos = np.array([[pos[d], pos[p]] for d, p in edges], dtype=np.int64).reshape(-1, 2)
    qdf = pd.DataFrame(
        {
            "id": [q["id"] for q in queries],
            "query": [q["query"] for q in queries],
            "template": [q.get("template", "") for q in queries],
            "regime": [q.get("regime", "") for q in queries],
            "chain": [tuple(q["chain"]) for q in queries],
        }
    )
    qdf["chain_pos"] = [np.array([pos[c] for c in ch], dtype=np.int64) for ch in qdf["chain"]]
    costs = np.fromiter((max(len(t.split()), 1) for t in texts), dtype=np.int64, count=len(texts))
    return Store(folder, head, ids, texts, kinds, costs, edge_pos, qdf)


# --- other encoders ----------------------------------------------------------------------------


def embed_store(store: Store, encoder: str = "sentence", progress: bool = True) -> Path:
    """<encoder>.npy and <encoder>.queries.npy beside the store: every unique text encoded once
    through the (cached, batched) encoder, rows written in store order as float32."""
    enc = get_encoder(encoder)
    unique = sorted(set(store.texts) | set(store.queries["query"]))
    vecs = enc.encode(unique, progress=progress)
    row = {t: i for i, t in enumerate(unique)}
    for name, texts in (
        (f"{encoder}.npy", store.texts),
        (f"{encoder}.queries.npy", list(store.queries["query"])),
    ):
        with atomic_path(store.path / name, suffix=".npy") as tmp:
            out = np.lib.format.open_memmap(
                tmp, mode="w+", dtype=np.float32, shape=(len(texts), enc.dim)
            )
            for a, b in chunks(0, len(texts), CHUNK):
                out[a:b] = vecs[[row[t] for t in texts[a:b]]]
            out.flush()
            del out
    return store.path / f"{encoder}.npy"


# --- retention over a store ---------------------------------------------------------------------


def _retention_task(
    folder: str, encoder: str, template: str, lo: int, hi: int, params: dict
) -> tuple[list[dict], float]:
    """Rows for the queries [lo, hi) of one template (the store's edges, costs and embeddings,
    memory-mapped, under each policy) and the task's own seconds."""
    t0 = time.perf_counter()
    store = _cached_store(folder)
    emb, qemb = store.embeddings(encoder)
    qs = store.queries[store.queries.template == template].iloc[lo:hi]
    rows = []
    for qi, q in zip(qs.index.tolist(), qs.itertuples(index=False), strict=True):
        chain = q.chain_pos
        mass = int(store.costs[chain].sum())
        budget = max(mass, math.ceil(params["multiplier"] * mass - 1e-9))
        for pol in params["policies"]:
            ret = PolicySetting(pol)(emb, qemb[qi], store.edges, store.costs, budget)
            kept = ret.kept[chain]
            rows.append(
                {
                    "blocks": len(store.ids),
                    "encoder": encoder,
                    "template": template,
                    "regime": q.regime,
                    "query": q.id,
                    "policy": pol,
                    "budget": budget,
                    "full_chain_retained": bool(kept.all()),
                    "c1_retained": bool(kept[0]),
                    "c1_rank": int(ret.rank_of(chain[:1])[0]),
                    "last_rank": int(ret.rank_of(chain[-1:])[0]),  # the query-facing link
                }
            )
    return rows, time.perf_counter() - t0


_STORES: dict[str, Store] = {}


def _cached_store(folder: str) -> Store:
    """A worker reads each store once and keeps it (and its memory maps) for its next tasks."""
    if folder not in _STORES:
        _STORES.clear()
        _STORES[folder] = read_store(folder)
    return _STORES[folder]


def store_retention(
    folder,
    encoder: str = "lexical",
    templates: Sequence[str] = tuple(STORE_TEMPLATES),
    queries: int = 100,
    policies: Sequence[str] = ("similarity", "dsgc"),
    multiplier: float = 2.0,
    chunk: int = 25,
    scheduler=None,
    progress: bool = False,
) -> pd.DataFrame:
    """Each of the first `queries` chains of each template queried over the whole store, under
    each policy with budget C = max(L, ceil(M L)); split by (template, query chunk), in-process
    or on Dask, rows in a fixed order."""
    folder = str(Path(folder).resolve())
    store = _cached_store(folder)
    params = {"policies": tuple(policies), "multiplier": float(multiplier)}
    tasks = []
    for t in templates:
        n = min(queries, int((store.queries.template == t).sum()))
        tasks += [(folder, encoder, t, a, b) for a, b in chunks(0, n, chunk)]
    parts = run_tasks(_retention_task, tasks, scheduler, params, progress)
    out = pd.DataFrame([r for rows, _ in parts for r in rows])
    out.attrs["task_seconds"] = [sec for _, sec in parts]  # per task, in task order
    return out


def retention_study(
    ns: Sequence[int],
    encoders: Sequence[str],
    folder,
    seed: int = 0,
    queries: int = 100,
    scheduler=None,
    progress: bool = False,
    templates: Sequence[str] = tuple(STORE_TEMPLATES),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Retention as the store grows: a store per N (made once in `folder`), each encoder's
    rows beside it, then `store_retention`. Returns (rows, per-task costs)."""
    rows, costs = [], []
    for n in ns:
        d = Path(folder) / f"blocks{n}-seed{seed}"
        if not (d / "store.jsonl").exists():
            generate_store(n, d, seed)
        for enc in encoders:
            if not (d / f"{enc}.npy").exists():
                embed_store(read_store(d), enc, progress)
            df = store_retention(d, enc, templates, queries, scheduler=scheduler, progress=progress)
            rows.append(df)
            per_task = len(df) // max(len(df.attrs["task_seconds"]), 1)
            costs += [
                {"blocks": n, "encoder": enc, "task": i, "rows": per_task, "seconds": sec}
                for i, sec in enumerate(df.attrs["task_seconds"])
            ]
    return pd.concat(rows, ignore_index=True), pd.DataFrame(costs)


def retention_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (blocks, encoder, regime, template, policy): queries, full-chain and c1 retention,
    median ranks of c1 (the first link, which a similarity ranking loses on the targets) and
    of the last link (the one that names the query's decision)."""
    g = rows.groupby(["blocks", "encoder", "regime", "template", "policy"], sort=False)
    return g.agg(
        queries=("query", "count"),
        full_chain=("full_chain_retained", "mean"),
        c1_kept=("c1_retained", "mean"),
        c1_median_rank=("c1_rank", "median"),
        last_median_rank=("last_rank", "median"),
    ).reset_index()
