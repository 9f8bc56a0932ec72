"""docs/architecture.md's recipe for a setting, followed by a setting
declared only here: one annotated field on `Settings` is read from the TOML
file and its environment variable, checked against its bounds, and the docs
test then asks for its row in docs/configuration.md."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import pytest
from msgspec import Meta

import notarium_search.settings
from notarium_search.settings import ConfigError, Env, Settings, load_settings
from tests import test_settings


class WithKnob(Settings, frozen=True):
    knob: Annotated[int, Env("NOTARIUM_KNOB"), Meta(ge=1, le=10)] = 3
    """A setting declared here only."""


@pytest.fixture
def knob_declared(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(notarium_search.settings, "Settings", WithKnob)
    notarium_search.settings._specs.cache_clear()  # the declarations are read once per process
    yield
    monkeypatch.undo()
    notarium_search.settings._specs.cache_clear()


def knob(settings: Settings) -> int:
    assert isinstance(settings, WithKnob)
    return settings.knob


def test_a_new_setting_is_one_declaration(tmp_path: Path, knob_declared: None) -> None:
    config = tmp_path / "c.toml"
    config.write_text("knob = 7\n")
    assert knob(load_settings(config, env={})) == 7
    assert knob(load_settings(config, env={"NOTARIUM_KNOB": "9"})) == 9  # the variable wins
    assert knob(load_settings(None, env={})) == 3
    config.write_text("knob = 11\n")
    with pytest.raises(ConfigError, match="knob"):
        load_settings(config, env={})
    with pytest.raises(AssertionError, match="knob"):
        test_settings.test_configuration_doc_lists_every_field()  # its row in docs/configuration.md is still to write


def test_without_its_declaration_the_key_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("knob = 7\n")
    with pytest.raises(ConfigError, match="unknown config keys: knob"):
        load_settings(config, env={})
