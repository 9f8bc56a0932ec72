"""Embeddings from an inference server (semantic/remote.py), against a real
OpenAI-compatible server on 127.0.0.1 embedding with the shared MiniLM pack
(tests/semantic/embed_server.py): batching, retries, a server down at start,
one that dies mid-build, one that refuses its token mid-build, answers larger
than a request can need, a model change, local queries beside it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from notarium_search.semantic import channel as channel_module
from notarium_search.semantic import remote
from notarium_search.semantic.embedder_errors import EmbedderUnavailable, EmbedderUnreachable
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.loading import load_configured_embedder
from notarium_search.semantic.probes import PROBES
from notarium_search.semantic.reference import REFERENCE_PASSAGES
from notarium_search.semantic.remote import RemoteEmbedder, load_remote_embedder, remote_config
from notarium_search.service import Service
from notarium_search.settings import ConfigError, load_settings
from notarium_search.types import ChannelState, FeedFilter
from tests.conftest import WAIT_SECONDS, Vault, eventually, ids, models_dir
from tests.semantic.embed_server import EmbedServer, serving
from tests.semantic.test_channel import expected_fragments, long_note, stored_fragments

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
CONFIG = remote_config({"dim": 384, "max_tokens": 256}, MINILM)
TEXTS = [f"note {i}: la résilience des réseaux électriques, cas {i}" for i in range(8)]


@pytest.fixture(scope="module")
def pack() -> Path:
    return models_dir() / "all-minilm-l6-v2-int8"


@pytest.fixture
def server(pack: Path) -> Iterator[EmbedServer]:
    with serving(pack, model=MINILM) as running:
        yield running


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The waits of the writer-thread paths (the service sleeps for real): the
    tests' patience, not the behaviour, which the unit tests check with a fake sleep."""
    monkeypatch.setattr(remote, "BACKOFF_FIRST_SECONDS", 0.01)
    monkeypatch.setattr(channel_module, "PAUSE_FIRST_SECONDS", 0.05)
    monkeypatch.setattr("notarium_search.service.MODEL_RETRY_FIRST_SECONDS", 0.05)


def embedder_for(server: EmbedServer, sleeps: list[float] | None = None, **kwargs: object) -> RemoteEmbedder:
    sleep = sleeps.append if sleeps is not None else (lambda seconds: None)
    return load_remote_embedder(server.url, CONFIG, MINILM, sleep=sleep, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the client


def test_batches_of_the_configured_size_give_the_local_vectors(server: EmbedServer, pack: Path):
    embedder = embedder_for(server, batch_size=3, concurrency=2)
    server.batches.clear()
    vectors = embedder.embed_passages(TEXTS)
    assert sorted(server.batches) == [2, 3, 3]
    assert vectors.dtype == np.float32
    assert vectors.shape == (8, 384)
    local = load_embedder(pack).embed_passages(TEXTS)
    # In input order, normalised, and the model's own vectors (MiniLM is batch-invariant).
    np.testing.assert_allclose(vectors, local, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query(TEXTS[0])
    assert query.shape == (384,)
    embedder.close()


def test_503_then_success_waits_as_retry_after_says(server: EmbedServer):
    sleeps: list[float] = []
    embedder = embedder_for(server, sleeps)
    server.fail(2, 503, retry_after="7")
    assert embedder.embed_passages(TEXTS[:2]).shape == (2, 384)
    assert sleeps == [7.0, 7.0]
    server.fail(2, 429)  # no Retry-After: doubling waits
    sleeps.clear()
    assert embedder.embed_passages(TEXTS[:2]).shape == (2, 384)
    assert sleeps == [remote.BACKOFF_FIRST_SECONDS, 2 * remote.BACKOFF_FIRST_SECONDS]
    embedder.close()


def test_a_server_failing_every_attempt_is_unreachable(server: EmbedServer):
    sleeps: list[float] = []
    embedder = embedder_for(server, sleeps)
    server.fail(remote.ATTEMPTS, 502)
    with pytest.raises(EmbedderUnreachable, match="HTTP 502"):
        embedder.embed_passages(TEXTS[:1])
    assert len(sleeps) == remote.ATTEMPTS - 1
    server.fail(1, 503, retry_after="3600")  # a wait beyond the writer's patience: the channel's pause takes it
    with pytest.raises(EmbedderUnreachable, match="asks to wait 3600 s"):
        embedder.embed_passages(TEXTS[:1])
    embedder.close()


def test_a_server_that_is_down_is_unreachable_at_load():
    with pytest.raises(EmbedderUnreachable, match="unreachable"):
        load_remote_embedder("http://127.0.0.1:9/v1/embeddings", CONFIG, MINILM, sleep=lambda s: None)


def test_token_wrong_dim_and_url_forms(server: EmbedServer):
    server.token = "s3cret-token-for-the-server"  # noqa: S105 - the test server's
    with pytest.raises(EmbedderUnavailable, match=r"HTTP 401.*NOTARIUM_EMBED_TOKEN") as refused:
        embedder_for(server)
    assert not isinstance(refused.value, EmbedderUnreachable)  # a configuration to fix: not retried
    embedder_for(server, token=server.token).close()
    wrong = remote_config({"dim": 768}, MINILM)
    with pytest.raises(EmbedderUnavailable, match=r"384-dimensional vectors .* dim is set to 768"):
        load_remote_embedder(server.url, wrong, MINILM, token=server.token)
    assert remote.endpoint("http://gpu:8080") == "http://gpu:8080/v1/embeddings"
    assert remote.endpoint("http://gpu:8080/v1/") == "http://gpu:8080/v1/embeddings"
    assert remote.endpoint("http://gpu:8080/v1/embeddings") == "http://gpu:8080/v1/embeddings"


OVERSIZED_BYTES = 100 * 1024 * 1024


@pytest.mark.parametrize(
    ("status", "declared"),
    [(200, False), (200, True), (401, False)],
    ids=["chunked", "content-length", "error-body"],
)
def test_an_answer_larger_than_the_request_can_need_is_read_no_further(
    server: EmbedServer, status: int, declared: bool
):
    """100 MB answered to a batch of two was read whole and parsed (+411 MiB
    of peak RSS): now the answer is streamed and given up past the bound, and
    the batch fails as a configuration error does (not tried again)."""
    embedder = embedder_for(server)
    server.oversized = (status, OVERSIZED_BYTES, declared)
    bound = embedder.answer_bound(2)
    assert bound < 1024 * 1024  # two vectors of 384 numbers
    expected = "HTTP 401" if status == 401 else f"more than {bound:,} bytes for 2 vectors of 384 numbers"
    with pytest.raises(EmbedderUnavailable, match=expected) as failed:
        embedder.embed_passages(TEXTS[:2])
    assert not isinstance(failed.value, EmbedderUnreachable)
    assert server.oversized_done.wait(WAIT_SECONDS)  # the server's writes failed: the client closed
    # What the client's socket took: the bound (or the error's first 4 KiB),
    # plus what the two sockets' kernel buffers hold (a few MiB on loopback).
    assert server.oversized_sent < OVERSIZED_BYTES // 4
    assert server.requests == 2  # the probe, then this batch: not tried again
    assert embedder.embed_passages(TEXTS[:2]).shape == (2, 384)  # the next batch is read as usual
    embedder.close()


def test_fingerprint_follows_the_model_not_the_host(server: EmbedServer):
    first = embedder_for(server)
    server.model = "BAAI/bge-small-en-v1.5"  # the server now serves another model under the same request
    second = embedder_for(server)
    assert first.fingerprint != second.fingerprint
    moved = RemoteEmbedder("http://elsewhere:8080", CONFIG, MINILM)
    moved.served_model = first.served_model
    assert moved.fingerprint == first.fingerprint
    for embedder in (first, second, moved):
        embedder.close()


# ---------------------------------------------------------------- the service


def remote_service(vault: Vault, server_url: str, **overrides: object) -> Service:
    settings: dict[str, object] = {
        "embed_url": server_url,
        "embed_model": MINILM,
        "model": {"dim": 384, "max_tokens": 256},
    }
    settings.update(overrides)
    return vault.service(vector_search=True, **settings)  # type: ignore[arg-type]


def write_notes(vault: Vault, count: int = 6) -> None:
    for i in range(count):
        vault.write(f"n{i}.md", long_note(f"n{i}", f"résilience{i}", paragraphs=4))


def start_building(service: Service) -> None:
    for space in service.spaces.values():
        space.writing.writer.start()
    service.load_model()


def vectors_by_fragment(service: Service) -> dict[str, np.ndarray]:
    semantic = service.spaces["notes"].semantic
    assert semantic is not None
    assert semantic.index is not None
    records = [r for rs in semantic.index.notes.values() for r in rs]
    return dict(zip((r.id for r in records), semantic.index.vectors(records), strict=True))


def test_down_at_start_answers_lexically_then_builds_without_restart(vault: Vault, pack: Path, fast_retries: None):
    write_notes(vault)
    server = EmbedServer(pack, model=MINILM)
    server.port = _free_port()
    service = remote_service(vault, server.url)
    try:
        start_building(service)  # the server is not up: the load fails, and is tried again by itself
        status = service.spaces["notes"].status().semantic
        assert status.state == ChannelState.UNAVAILABLE
        assert status.reason is not None
        assert "unreachable" in status.reason
        assert "retrying in" in status.reason
        response = service.search("notes", "résilience0", FeedFilter(), 10)
        assert response.results
        assert "unreachable" in response.degraded["semantic"]
        server.start()
        eventually(lambda: service.spaces["notes"].status().semantic.state == ChannelState.READY)
        assert stored_fragments(service) == expected_fragments(service)
        response = service.search("notes", "résilience0", FeedFilter(), 10)
        assert "semantic" in response.channels_used
        assert not response.degraded
    finally:
        service.stop()
        server.stop()


def test_dies_mid_build_pauses_then_resumes_to_the_same_vectors(vault: Vault, pack: Path, fast_retries: None):
    write_notes(vault, 12)
    with serving(pack, model=MINILM) as server:
        reference = remote_service(vault, server.url, index_dir=vault.index_dir / "reference")
        start_building(reference)
        eventually(lambda: reference.spaces["notes"].status().semantic.state == ChannelState.READY)
        expected = vectors_by_fragment(reference)
        reference.stop()
    server = EmbedServer(pack, model=MINILM)
    server.start()
    service = remote_service(vault, server.url, embed_url_batch=4, embed_url_concurrency=1)
    # The probe, the reference passages (semantic/calibration.py), then two batches of fragments.
    server.die_after = 1 + math.ceil(len(REFERENCE_PASSAGES) / 4) + 2
    try:
        start_building(service)
        assert server.died.wait(60)
        space = service.spaces["notes"]
        eventually(lambda: space.semantic is not None and space.semantic.paused is not None)
        status = space.status().semantic
        assert status.state == ChannelState.BUILDING
        assert status.reason is not None
        assert "embedding paused" in status.reason
        assert 0 < (status.embedded or 0) < (status.total or 0)
        server.start()  # the same port
        eventually(lambda: space.status().semantic.state == ChannelState.READY)
        got = vectors_by_fragment(service)
        assert got.keys() == expected.keys() == expected_fragments(service)
        for fragment_id, vector in expected.items():
            np.testing.assert_allclose(got[fragment_id], vector, atol=1e-5)
        assert space.writing.writer.running
    finally:
        service.stop()
        server.stop()


def test_a_token_refused_mid_build_stops_the_build_without_retrying(vault: Vault, pack: Path, fast_retries: None):
    """A 401 mid-build (the server's token rotated) paused the build and tried
    again every 5 s to 5 min, for ever, status saying "paused", though a
    configuration error is not retried: now the build stops, status says why."""
    write_notes(vault, 12)
    server = EmbedServer(pack, model=MINILM)
    server.start()
    service = remote_service(vault, server.url, embed_url_batch=4, embed_url_concurrency=1)
    # The probe, the reference passages (semantic/calibration.py), two batches of fragments; then 401s.
    server.token_after = (1 + math.ceil(len(REFERENCE_PASSAGES) / 4) + 2, "rotated-token")
    try:
        start_building(service)
        space = service.spaces["notes"]
        eventually(lambda: space.status().semantic.state == ChannelState.UNAVAILABLE)
        status = space.status().semantic
        assert status.reason is not None
        assert "HTTP 401" in status.reason
        assert "NOTARIUM_EMBED_TOKEN" in status.reason
        assert "not retried" in status.reason
        assert 0 < (status.embedded or 0) < (status.total or 0)  # where it stopped, the vectors kept
        assert server.refused == 1
        requests = server.requests
        # The writer goes on with the notes (an edit is searchable) and asks the server nothing more.
        vault.write("late.md", "---\nid: late\n---\nUne note écrite après le refus : zéphyr.\n")
        service.reindex("notes", full=False)
        eventually(lambda: ids(service.search("notes", "zéphyr", FeedFilter(), 10)) == ["late"])
        assert (server.requests, server.refused) == (requests, 1)
        response = service.search("notes", "résilience0", FeedFilter(), 10)
        assert "HTTP 401" in response.degraded["semantic"]
        assert space.semantic is not None
        assert not space.semantic.has_work
    finally:
        service.stop()
        server.stop()


def calibrated(service: Service) -> bool:
    """Ready, and the space's noise measured (semantic/probes.py): the writer's last embedding of a build."""
    semantic = service.spaces["notes"].semantic
    ready = service.spaces["notes"].status().semantic.state == ChannelState.READY
    return ready and semantic is not None and semantic.index is not None and not semantic.index.calibration_due


def test_model_change_rebuilds_every_vector(vault: Vault, pack: Path):
    write_notes(vault, 4)
    with serving(pack, model=MINILM) as server:
        service = remote_service(vault, server.url)
        start_building(service)
        eventually(lambda: calibrated(service))
        fragments = len(expected_fragments(service))
        service.stop()
        # The same model again: nothing is embedded anew (the calibration is kept with the vectors).
        server.texts_embedded = 0
        service = remote_service(vault, server.url)
        start_building(service)
        eventually(lambda: calibrated(service))
        passages = server.texts_embedded
        service.stop()
        # The server now serves another model: every fragment is embedded again, and the probes.
        server.model = "intfloat/multilingual-e5-small"
        server.texts_embedded = 0
        service = remote_service(vault, server.url)
        start_building(service)
        eventually(lambda: calibrated(service))
        assert server.texts_embedded - passages == fragments + PROBES
        assert stored_fragments(service) == expected_fragments(service)
        service.stop()


def test_queries_from_the_local_pack_only_when_it_is_the_same_model(server: EmbedServer, vault: Vault, pack: Path):
    same = vault.settings(vector_search=True, embed_url=server.url, embed_model=MINILM, model_dir=pack)
    embedder = load_configured_embedder(same)
    assert isinstance(embedder, remote.SplitEmbedder)
    server.stop()  # queries no longer need the server
    assert embedder.embed_query("résilience").shape == (384,)
    server.start()
    other = vault.settings(
        vector_search=True,
        embed_url=server.url,
        embed_model=MINILM,
        model_dir=models_dir() / "multilingual-e5-small-int8",
    )
    with pytest.raises(EmbedderUnavailable, match="disagree"):
        load_configured_embedder(other)


def test_settings_read_the_server(tmp_path: Path):
    env = {
        "NOTARIUM_EMBED_URL": "http://gpu:8080",
        "NOTARIUM_EMBED_MODEL": MINILM,
        "NOTARIUM_EMBED_TOKEN": "tok",
        "NOTARIUM_EMBED_URL_BATCH": "64",
    }
    settings = load_settings(env=env)
    assert (settings.embed_url, settings.embed_model, settings.embed_token) == ("http://gpu:8080", MINILM, "tok")
    assert settings.embed_url_batch == 64
    with pytest.raises(ConfigError, match="NOTARIUM_EMBED_URL"):
        load_settings(env={"NOTARIUM_EMBED_URL": "gpu:8080"})
    config = tmp_path / "notarium.toml"
    config.write_text("[model]\ndim = 384\nrelevance_margin = 0.35\n")  # as docs/configuration.md shows it
    assert load_settings(config, env={}).model["relevance_margin"] == 0.35


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
