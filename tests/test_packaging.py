"""Packaging facts the image relies on. The image itself is built and run by
tests/container (`bash .ci/docker-smoke`)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from notarium_search import cli
from notarium_search.logsetup import configure_logging
from notarium_search.semantic.presets import PRESETS
from tests.conftest import models_dir, run_child
from tests.fake_hub import FakeHub

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def test_build_backend_floor_supports_the_license_expression():
    """`license = "MIT"` (a string: an SPDX expression, PEP 639) is refused
    by setuptools before 77; an older backend allowed by the floor would fail
    the image build (pip fetches the floor's range in an isolated build)."""
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    if not isinstance(pyproject["project"].get("license"), str):
        return  # the table form works with any setuptools
    (setuptools,) = [r for r in pyproject["build-system"]["requires"] if re.match(r"setuptools\b", r)]
    floor = re.search(r">=\s*(\d+)", setuptools)
    assert floor is not None, setuptools
    assert int(floor.group(1)) >= 77, setuptools


@pytest.fixture
def cli_logging() -> Iterator[None]:
    """`models` commands configure logging onto this test's captured stderr,
    deferred to the first line logged: left so, a later test's first line
    applied it and replaced caplog's handler with a closed stream."""
    yield
    configure_logging("warning")  # as tests/conftest.py leaves it


def test_dockerfile_hub_route_fetches_the_default_preset_as_a_working_pack(
    tmp_path: Path, fake_hub: FakeHub, capsys: pytest.CaptureFixture[str], cli_logging: None
):
    """The semantic tier's default route (no MODEL_PACK): the Dockerfile's own
    `models download` command, with its ARG defaults, against a hub laid out
    like Xenova/multilingual-e5-small (an fp32 graph at onnx/model.onnx, the
    int8 one at onnx/model_quantized.onnx, no sentence-transformers files, so
    no pooling). It must take the int8 graph and give a pack that `models
    check` accepts, with the E5 prefixes. The hub (tests/fake_hub.py) serves
    the shared pack's files, so the command is given their SHA-256 in place
    of the preset's, which pins the hub's own build."""
    e5, minilm = models_dir() / "multilingual-e5-small-int8", models_dir() / "all-minilm-l6-v2-int8"
    preset = PRESETS["multilingual-e5-small"]
    fake_hub.commit = preset.revision
    fake_hub.add(
        preset.repo_id,
        {
            "onnx/model_quantized.onnx": (e5 / "model.onnx").read_bytes(),
            "onnx/model.onnx": (minilm / "model.onnx").read_bytes(),  # stands for the 470 MB fp32 graph
            "tokenizer.json": (e5 / "tokenizer.json").read_bytes(),
            "config.json": json.dumps({"hidden_size": 384, "max_position_embeddings": 512}).encode(),
        },
    )
    target = tmp_path / "default"
    argv = dockerfile_download_command(target)
    assert argv == ["models", "download", "multilingual-e5-small", str(target)]
    graph_sha256 = hashlib.sha256((e5 / "model.onnx").read_bytes()).hexdigest()
    assert cli.main([*argv, "--sha256", graph_sha256]) == 0, capsys.readouterr().err
    assert (target / "model.onnx").read_bytes() == (e5 / "model.onnx").read_bytes()
    config = json.loads((target / "model.json").read_text())
    assert (config["pooling"], config["query_prefix"], config["passage_prefix"]) == ("mean", "query: ", "passage: ")
    capsys.readouterr()
    assert cli.main(["models", "check", str(target)]) == 0
    assert "dim 384, pooling mean" in capsys.readouterr().out


def dockerfile_download_command(target: Path) -> list[str]:
    """The Dockerfile's `notarium-search models download ...` words, its
    $VARIABLES replaced by their ARG defaults and the target by `target`."""
    defaults = dict(re.findall(r"^ARG (\w+)=(\S*)$", DOCKERFILE, re.M))
    joined = DOCKERFILE.replace("\\\n", " ")
    (command,) = re.findall(r"notarium-search (models download [^;]+);", joined)
    words = [re.sub(r"\$(\w+)", lambda m: defaults[m.group(1)], word) for word in shlex.split(command)]
    return [str(target) if word == "/opt/models/default" else word for word in words]


def test_empty_vector_search_reads_as_off():
    """The lexical image sets VECTOR_SEARCH to an empty string (`${SEMANTIC:+1}`)."""
    from notarium_search.settings import load_settings

    assert "VECTOR_SEARCH=${SEMANTIC:+1}" in DOCKERFILE
    assert load_settings(env={"VECTOR_SEARCH": ""}).vector_search is False


def test_the_version_is_read_from_the_installed_metadata():
    """One version string: pyproject.toml's, read by the code from the metadata."""
    import tomllib
    from importlib.metadata import version

    import notarium_search

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert notarium_search.__version__ == version("notarium-search") == pyproject["project"]["version"]
    # and not by a second literal that a release could forget to bump
    source = (ROOT / "notarium_search" / "__init__.py").read_text()
    assert not re.search(r"__version__\s*=\s*[\"']\d+\.\d+", source)


def test_classifiers_say_posix_only():
    """fcntl locks (index/folder.py, notes/scan.py): POSIX systems, not Windows."""
    import tomllib

    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["classifiers"]
    assert "Operating System :: POSIX" in classifiers
    assert not [c for c in classifiers if "Windows" in c or c == "Operating System :: OS Independent"]


def test_constraints_pin_every_dependency_of_both_tiers_exactly():
    """constraints.txt (docs/operations.md, regenerated with `uv pip compile`)
    gives one exact version, within pyproject's range, to every dependency of
    the lexical and semantic tiers, and the image installs with it. A
    dependency added or narrowed in pyproject.toml without regenerating the
    file fails here."""
    import tomllib

    from packaging.markers import default_environment
    from packaging.requirements import Requirement

    pins: dict[str, list[Requirement]] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pinned = Requirement(line)
            assert [spec.operator for spec in pinned.specifier] == ["=="], line
            pins.setdefault(_normal(pinned.name), []).append(pinned)
    image = {key: str(value) for key, value in default_environment().items()}
    image.update(python_full_version="3.11.11", python_version="3.11")  # the image's Python
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for line in [*project["dependencies"], *project["optional-dependencies"]["semantic"]]:
        wanted = Requirement(line)
        versions = [p.specifier for p in pins.get(_normal(wanted.name), []) if not p.marker or p.marker.evaluate(image)]
        assert len(versions) == 1, f"{wanted.name}: pinned {len(versions)} times for the image's Python"
        assert wanted.specifier.contains(next(iter(versions[0])).version), f"{line} against {versions[0]}"
    assert "--constraint /src/constraints.txt" in DOCKERFILE
    assert "constraints.txt" in (ROOT / ".dockerignore").read_text()


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


LEXICAL_TIER = """
import json, sys, tempfile
from pathlib import Path

SEMANTIC_EXTRA = ("numpy", "onnxruntime", "usearch", "tokenizers", "sentencepiece", "huggingface_hub")

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in SEMANTIC_EXTRA:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NotInstalled())
from notarium_search.api.app import create_app
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig

root = Path(tempfile.mkdtemp())
(root / "notes").mkdir()
(root / "notes" / "a.md").write_text("alpha")
settings = Settings(spaces=(SpaceConfig("notes", root / "notes"),), index_dir=root / "index", log_level="warning")
writer, follower = Service(settings, shared=True), Service(settings, shared=True)
create_app(settings, follower)
writer.spaces["notes"].writing.run_reconcile()
print(json.dumps({"follows": type(follower.spaces["notes"].role).__name__ == "Follower"}))
"""


def test_the_lexical_tier_serves_without_the_semantic_extra():
    """The lexical image installs no numpy, onnxruntime or usearch: every
    module a serving worker imports must do without them (the follower's
    first version imported the semantic channel, and the image's workers
    died at start)."""
    assert run_child(LEXICAL_TIER) == {"follows": True}
