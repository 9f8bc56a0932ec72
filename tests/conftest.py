"""Shared fixtures: real spaces on disk, real Tantivy indexes, real services."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import pytest

from notarium_search.logsetup import configure_logging
from notarium_search.service import Service
from notarium_search.settings import Settings, SpaceConfig

configure_logging("warning")


class Vault:
    """A temporary spaces root whose files tests write, plus an index dir."""

    def __init__(self, root: Path) -> None:
        self.root = root / "spaces"
        self.index_dir = root / "index"
        self.root.mkdir()

    def write(self, rel_path: str, content: str | bytes, space: str = "notes", mtime: float | None = None) -> Path:
        path = self.root / space / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        else:
            # Distinct mtimes even within one clock tick, so edits are always seen.
            stamp = time.time() + _tick()
            os.utime(path, (stamp, stamp))
        return path

    def remove(self, rel_path: str, space: str = "notes") -> None:
        (self.root / space / rel_path).unlink()

    def settings(self, **overrides: object) -> Settings:
        spaces = []
        for child in sorted(self.root.iterdir()):
            language = "en" if child.name.startswith("en") else "fr"
            spaces.append(SpaceConfig(child.name, child, language))
        base = Settings(spaces=tuple(spaces), spaces_root=self.root, index_dir=self.index_dir, log_level="warning")
        return replace(base, **overrides)  # type: ignore[arg-type]

    def service(self, **overrides: object) -> Service:
        """A service whose spaces are fully indexed (synchronously)."""
        service = Service(self.settings(**overrides))
        for space in service.spaces.values():
            space.run_reconcile()
        return service


_counter = [0]


def _tick() -> float:
    _counter[0] += 1
    return _counter[0] * 0.001


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    return Vault(tmp_path)


def ids(response: object) -> list[str]:
    return [hit.note.id for hit in response.results]  # type: ignore[attr-defined]
