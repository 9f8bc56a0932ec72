"""The package installs the way the Dockerfile installs it, from the files the
Dockerfile copies (a Docker engine is not available to build the image here)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def build_stage_copies() -> list[str]:
    build_stage = re.split(r"^FROM ", DOCKERFILE, flags=re.M)[1]
    sources: list[str] = []
    for line in re.findall(r"^COPY (?!--from)(.+)$", build_stage, re.M):
        sources.extend(line.split()[:-1])
    return sources


def test_dockerfile_installs_the_project_with_pip():
    assert re.search(r"pip install --no-cache-dir /src\b", DOCKERFILE)
    assert "USER 10001" in DOCKERFILE
    assert "HEALTHCHECK" in DOCKERFILE
    assert "/healthz" in DOCKERFILE
    assert "NOTARIUM_SPACES_ROOT=/notes" in DOCKERFILE
    assert "NOTARIUM_INDEX_DIR=/data/index" in DOCKERFILE


def test_build_backend_floor_supports_the_license_expression():
    """`license = "MIT"` (a string: an SPDX expression, PEP 639) is refused
    by setuptools before 77; an older backend allowed by the floor would fail
    the image build (pip fetches the floor's range in an isolated build)."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    if not isinstance(pyproject["project"].get("license"), str):
        return  # the table form works with any setuptools
    floors = {
        "build-system": pyproject["build-system"]["requires"],
        "dev extra": pyproject["project"]["optional-dependencies"]["dev"],
    }
    for where, requirements in floors.items():
        (setuptools,) = [r for r in requirements if re.match(r"setuptools\b", r)]
        floor = re.search(r">=\s*(\d+)", setuptools)
        assert floor is not None, (where, setuptools)
        assert int(floor.group(1)) >= 77, (where, setuptools)


@pytest.mark.slow
def test_install_from_the_copied_files(tmp_path: Path):
    """What this covers: the build stage's COPY lines bring every file the
    package needs (modules, the Spotlight page's package data, the entry
    point), and the result imports and runs from where it was installed.

    What it does not: it installs offline with `--no-deps` (the dependencies
    are this venv's, not resolved from the registry as in the image),
    `--no-build-isolation` (this venv's setuptools builds it, not the one pip
    would fetch for `[build-system] requires`), and `--target` (a plain
    folder, not the image's venv); no image is built and the `semantic`
    extra is not installed (no Docker engine here)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in build_stage_copies():
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    target = tmp_path / "site"
    # Same command as the image, minus dependency downloads (they are this venv's).
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-cache-dir",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(src),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (target / "notarium_search" / "api" / "app.py").exists()
    assert (target / "notarium_search" / "web" / "app.js").exists()  # package data: the Spotlight page
    entry_points = next(target.glob("notarium_search-*.dist-info")) / "entry_points.txt"
    assert "notarium-search = notarium_search.cli:main" in entry_points.read_text()
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-m", "notarium_search", "--help"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0
    assert "serve" in result.stdout
    imported = subprocess.run(
        [sys.executable, "-c", "import notarium_search.api.app as m; print(m.__file__)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert imported.stdout.startswith(str(target))


def test_semantic_tier_is_a_build_argument():
    import tomllib

    assert '"/src[semantic]"' in DOCKERFILE
    assert "models download" in DOCKERFILE
    assert "VECTOR_SEARCH=${SEMANTIC:+1}" in DOCKERFILE
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=\[]", requirement)[0].lower() for requirement in extras["semantic"]}
    assert names == {"onnxruntime", "tokenizers", "usearch", "numpy"}
    # The lexical image sets VECTOR_SEARCH to an empty string: that must read as off.
    from notarium_search.settings import load_settings

    assert load_settings(env={"VECTOR_SEARCH": ""}).vector_search is False
