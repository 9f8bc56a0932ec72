"""A wrong build argument fails the image build with a clear message, not
the container's first start (run after the tiers' builds, whose install
layers they reuse)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import models_dir
from tests.container.conftest import PACK_PREFIX
from tests.container.engine import BUILD_SECONDS, ROOT, Engine, base_image
from tests.container.running import LABEL, Built, build_refused, unique

pytestmark = [pytest.mark.container, pytest.mark.timeout(1800)]


@pytest.fixture
def broken_pack() -> Iterator[str]:
    """A pack in the build context whose graph is cut short."""
    relative = f"models/{PACK_PREFIX}{unique('broken')}"
    target = ROOT / relative
    shutil.copytree(models_dir() / "all-minilm-l6-v2-int8", target)
    target.chmod(0o755)
    graph = target / "model.onnx"
    graph.chmod(0o644)
    graph.write_bytes(graph.read_bytes()[:100_000])
    yield relative
    shutil.rmtree(target)


def test_a_broken_pack_fails_the_build(engine: Engine, semantic_image: Built, broken_pack: str) -> None:
    output = build_refused(engine, {"SEMANTIC": "1", "MODEL_PACK": broken_pack})
    assert "model pack /opt/models/default is not usable: cannot load /opt/models/default/model.onnx" in output, output[
        -3000:
    ]


def test_a_pack_outside_the_context_fails_the_build(engine: Engine, semantic_image: Built) -> None:
    output = build_refused(engine, {"SEMANTIC": "1", "MODEL_PACK": "models/no-such-pack"})
    assert "MODEL_PACK=models/no-such-pack is not a folder of the build context" in output, output[-3000:]


@pytest.mark.parametrize("pack", ["docs", "models/../docs", "models/a/b", ".venv/lib"])
def test_a_pack_outside_models_is_refused(engine: Engine, semantic_image: Built, pack: str) -> None:
    """Only a folder of models/ is mounted into the build (podman's bind
    mounts ignore .dockerignore): anything else is refused by name."""
    output = build_refused(engine, {"SEMANTIC": "1", "MODEL_PACK": pack})
    assert f"MODEL_PACK={pack}: name a folder of models/" in output, output[-3000:]


def test_a_pack_without_the_semantic_tier_fails_the_build(engine: Engine, lexical_image: Built) -> None:
    output = build_refused(engine, {"MODEL_PACK": "models/multilingual-e5-small-int8"})
    assert "MODEL_PACK needs --build-arg SEMANTIC=1" in output, output[-3000:]


def test_semantic_takes_one_or_nothing(engine: Engine, lexical_image: Built) -> None:
    """SEMANTIC=0 used to build the semantic tier (any value did)."""
    output = build_refused(engine, {"SEMANTIC": "0"})
    assert "SEMANTIC=0: give 1 for the semantic tier, nothing for the lexical one" in output, output[-3000:]


def test_build_context_holds_only_what_the_image_needs(engine: Engine, lexical_image: Built, tmp_path: Path) -> None:
    """.dockerignore: no .git, .venv, caches, indexes or compiled files in the
    context (before it, `docker build .` sent the 800 MB .venv). The probe
    image is listed by a container of it: build output differs by engine."""
    probe = tmp_path / "Dockerfile"
    probe.write_text(f"FROM {base_image()}\nCOPY . /context\n")
    tag = f"notarium-search-smoke:{unique('context')}"
    engine.run(
        "build", *engine.build_options, "--no-cache", "-f", str(probe), "-t", tag, str(ROOT), timeout=BUILD_SECONDS
    )
    try:
        listing = "find /context -mindepth 1 -maxdepth 1; find /context -name '*.py[co]'"
        listed = engine.run("run", "--rm", "--label", LABEL, tag, "sh", "-c", listing).stdout.split()
    finally:
        engine.run("rmi", "--force", tag, check=False)
    top = {path.removeprefix("/context/") for path in listed}
    assert top <= {"pyproject.toml", "README.md", "LICENSE", "constraints.txt", "notarium_search", "models"}, top
    assert {"pyproject.toml", "README.md", "LICENSE", "constraints.txt", "notarium_search"} <= top, top
