"""Relevance you can trust, on the sample vault with the real default model
(multilingual-e5-small), VECTOR_SEARCH and GRAPH_BOOST on, as config/sample.toml
ships it: a query nothing answers gets nothing, semantic noise never lists a
note alone, and the graph follows only real matches."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from notarium_search.semantic.embedding import load_embedder
from notarium_search.service import Service
from notarium_search.settings import load_settings
from notarium_search.types import FeedFilter
from tests.conftest import PROJECT_ROOT, build_semantic, ids, models_dir

PATIENT_MS = 60_000  # the deadline is not under test: a loaded machine must not degrade the answers
NO_FILTER = FeedFilter()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    root = tmp_path_factory.mktemp("sample")
    shutil.copytree(PROJECT_ROOT / "docs" / "sample-vault", root / "vault")  # never index the repository's copy
    config = root / "notarium.toml"
    config.write_text(
        f'spaces_root = "{root / "vault"}"\nindex_dir = "{root / "index"}"\n'
        f"vector_search = true\ngraph_boost = true\nquery_embed_timeout_ms = {PATIENT_MS}\n"
        f'model_dir = "{models_dir() / "multilingual-e5-small-int8"}"\n[spaces.lab]\nlanguage = "en"\n',
        encoding="utf-8",
    )
    service = Service(load_settings(config, env={}))
    build_semantic(service, load_embedder(service.settings.model_dir))  # type: ignore[arg-type]
    yield service
    service.stop()


@pytest.mark.slow
@pytest.mark.parametrize("space", ["carnet", "lab"])
def test_a_made_up_word_finds_nothing_and_says_why(sample: Service, space: str):
    response = sample.search(space, "xyzzy", NO_FILTER, 10)
    assert response.results == ()  # it returned every note: the semantic channel's k nearest, however far
    assert response.degraded == {}  # every channel answered
    assert "no hit reaches the relevance floor" in response.caveats["semantic"]


@pytest.mark.slow
def test_meaning_still_finds_a_note_no_word_of_the_query_is_in(sample: Service):
    response = sample.search("lab", "a famous line from Shakespeare", NO_FILTER, 10)
    assert ids(response)[0] == "hamlet.md"
    assert response.results[0].channels == {"semantic": 1}
    # Where: its fragment's line in the file, after the 4 lines of frontmatter.
    assert [s.line for s in response.results[0].snippets] == [5]
    # Above Reciprocal Rank Fusion, which it used to follow.
    assert "papers/rrf.md" not in ids(response)[: ids(response).index("hamlet.md")]


@pytest.mark.slow
def test_semantic_evidence_below_the_floor_only_adds_to_notes_words_found(sample: Service):
    response = sample.search("carnet", "interopérabilité", NO_FILTER, 10)
    for hit in response.results:
        trace = hit.trace.get("semantic")
        if trace is not None and not trace.confident:
            assert set(hit.channels) - {"semantic"}, f"{hit.note.id} was listed by a semantic hit below the floor"
    # The notes that say it come first (the agent note says it as written, the
    # other note "Interopérabilités": in French the exact form ranks first).
    assert ids(response)[:2] == ["z-2024-0001", "z-2024-0002"]


@pytest.mark.slow
def test_the_graph_follows_only_real_matches(sample: Service):
    """Seeded from noise, the graph lifted linked notes into a nonsense
    query's answer; with nothing matched, it finds nothing."""
    response = sample.search("carnet", "xyzzy plugh", NO_FILTER, 10)
    assert "graph" in response.channels_used
    assert response.results == ()


@pytest.mark.slow
def test_an_assistant_is_told_why_nothing_came_back(sample: Service):
    from notarium_search.mcp.text import search_text

    text = search_text("carnet", sample.search("carnet", "xyzzy", NO_FILTER, 10), None)
    assert 'No note matches "xyzzy" in space carnet.' in text
    assert "No note is closer in meaning than unrelated text is." in text
