"""Shared fixtures: a seed fixed by default and widened by WORKBENCH_SEEDS (e.g. '0:100')."""

import os

import pytest
from hypothesis import settings

from workbench.common.seeds import seed_range
from workbench.dsgc.generator import worked_example

# CI runs the same hypothesis examples every time (a red run is reproducible, never luck);
# outside CI hypothesis searches with fresh randomness on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


SEEDS = list(seed_range(os.environ.get("WORKBENCH_SEEDS", "0:1")))


def exported_worked_example(**extra) -> dict:
    """The paper's worked example (generator.worked_example) as another implementation might
    export it: its own block ids, no kinds, template, regime or seed, and `extra` keys."""
    sc = worked_example()
    new = dict(zip(sc.ids, ("n7", "n2", "n9", "z1", "z2", "z3"), strict=True))
    return {
        "id": "ext-1",
        "query": sc.query,
        "blocks": [{"id": new[b.id], "text": b.text} for b in sc.blocks],
        "edges": [[new[d], new[p]] for d, p in sc.edges],
        "chain": [new[c] for c in sc.chain],
        **extra,
    }


@pytest.fixture(scope="module", params=SEEDS, ids=lambda s: f"seed{s}")
def global_seed(request):
    """Seed 0 by default; WORKBENCH_SEEDS=0:100 runs the seeded tests on seeds 0-99 (module
    scope, so a module's seeded fixtures are built once per seed)."""
    return request.param


@pytest.fixture(autouse=True, scope="session")
def _isolated_embedding_cache(tmp_path_factory):
    """Tests never read or write the user's embedding cache."""
    old = os.environ.get("WORKBENCH_CACHE_DIR")
    os.environ["WORKBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("embcache"))
    yield
    if old is None:
        os.environ.pop("WORKBENCH_CACHE_DIR", None)
    else:
        os.environ["WORKBENCH_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def _sentence_marker_is_honest(request, monkeypatch):
    """A test that runs the sentence model in this process must carry the `sentence` marker, so
    `-m "not sentence"` really skips every test that needs the model."""
    if request.node.get_closest_marker("sentence") is not None:
        return
    from workbench.common.encoders import SentenceEncoder

    load = SentenceEncoder._load

    def guarded(self):
        if self.model_path is None:  # the real model (a test may point at a fake path)
            pytest.fail("this test runs the sentence model but is not marked @pytest.mark.sentence")
        return load(self)

    monkeypatch.setattr(SentenceEncoder, "_load", guarded)
