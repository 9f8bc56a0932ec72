"""Both tiers of the image, built once per session from the repository's
Dockerfile; their sizes and timings are printed at the end of the run."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import models_dir
from tests.container.engine import ROOT, Engine, find_engine
from tests.container.running import FALLBACKS, Built, build, sweep

# The pack the semantic tier is built from, copied into the build context's
# git-ignored models/ folder (the README's local-pack route).
PACK = "multilingual-e5-small-int8"
PACK_PREFIX = "smoke-"  # the copies these checks make in models/
WORK = Path(os.environ.get("NOTARIUM_CONTAINER_WORK", "/var/tmp/notarium-search-containers"))
FIGURES: list[str] = []


def record(figure: str) -> None:
    """A size or timing for the summary at the end of the run."""
    FIGURES.append(figure)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if FIGURES:
        terminalreporter.section("container images: sizes and timings")
        for figure in FIGURES:
            terminalreporter.write_line(figure)


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    found = find_engine(WORK)
    record(f"engine: {found.name}")
    for done in found.setup:
        record(done)
    sweep(found)
    for leftover in (ROOT / "models").glob(f"{PACK_PREFIX}*"):  # packs a killed run copied
        shutil.rmtree(leftover)
    yield found
    sweep(found)
    FIGURES.extend(FALLBACKS)
    if found.name == "podman":
        # Its storage is ours (WORK): the untagged layers of this run's builds go.
        # The images stay, tagged notarium-search-smoke:TIER, for a look by hand.
        found.run("image", "prune", "--force", check=False)


@pytest.fixture(scope="session")
def lexical_image(engine: Engine) -> Built:
    return _built(engine, "lexical", {})


@pytest.fixture(scope="session")
def semantic_image(engine: Engine) -> Iterator[Built]:
    # A copy of our own, under a name no user pack has. Its folder is 0700, as a
    # pack `models download` made before it set the mode: the image's user must
    # still read it (the build makes the model readable, then checks it as 10001).
    target = ROOT / "models" / f"{PACK_PREFIX}{os.getpid()}-{PACK}"
    shutil.copytree(models_dir() / PACK, target)
    target.chmod(0o700)
    try:
        yield _built(engine, "semantic", {"SEMANTIC": "1", "MODEL_PACK": f"models/{target.name}"})
    finally:
        shutil.rmtree(target)


def _built(engine: Engine, tier: str, build_args: dict[str, str]) -> Built:
    built = build(engine, tier, build_args)
    record(f"{tier} tier: built in {built.seconds:.0f} s, image {built.size / 1e6:.0f} MB ({built.tag})")
    return built
