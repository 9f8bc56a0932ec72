"""Logging: a known flood (the server out of descriptors) is logged once a
window with the count of what was dropped, not once per event."""

from __future__ import annotations

import logging

import pytest

from notarium_search.logsetup import FloodFilter
from notarium_search.settings import ConfigError, load_settings


def record(name: str, message: str) -> logging.LogRecord:
    return logging.LogRecord(name, logging.ERROR, __file__, 1, message, None, None)


def test_a_flood_is_logged_once_a_window_with_what_was_dropped():
    now = [0.0]
    flood = FloodFilter(window=60.0, clock=lambda: now[0])
    accept = "Failed to accept connection: TooManyOpenFiles"
    assert flood.filter(record("_granian.workers", accept))
    for _ in range(1000):  # the same second, and the rest of the minute
        now[0] += 0.05
        assert not flood.filter(record("_granian.workers", accept))
    assert flood.filter(record("notarium_search.index.space", "space_index_failed"))  # other records pass
    now[0] = 60.0
    kept = record("_granian.workers", accept)
    assert flood.filter(kept)
    assert "1000 more like it in the last 60 s" in kept.getMessage()


def test_the_server_limits_are_validated():
    settings = load_settings(env={"NOTARIUM_HEADER_TIMEOUT": "1.5", "NOTARIUM_MAX_CONNECTIONS": "64"})
    assert (settings.header_timeout, settings.max_connections) == (1.5, 64)
    refused = {
        "NOTARIUM_HEADER_TIMEOUT=0": "NOTARIUM_HEADER_TIMEOUT='0': expected `float` >= 0.5",
        "NOTARIUM_HEADER_TIMEOUT=61": "NOTARIUM_HEADER_TIMEOUT='61': expected `float` <= 60",
        "NOTARIUM_MAX_CONNECTIONS=0": "NOTARIUM_MAX_CONNECTIONS='0': expected `int` >= 1",
        "NOTARIUM_HEADER_TIMEOUT=soon": "NOTARIUM_HEADER_TIMEOUT='soon': expected `float`, got `str`",
    }
    for setting, message in refused.items():
        name, value = setting.split("=")
        with pytest.raises(ConfigError) as caught:
            load_settings(env={name: value})
        assert str(caught.value).startswith(message)


def test_a_command_that_logs_nothing_never_imports_structlog_and_one_that_does_logs_json(tmp_path):
    """structlog (with asyncio, rich, attrs, pygments: ~80 ms) is imported on
    the first line logged; a deferred configuration is applied then."""
    import json
    import subprocess
    import sys

    script = """
import io, json, sys
from notarium_search.logsetup import configure_logging, get_logger
stream = io.StringIO()
configure_logging("warning", stream, on_first_use=True)
import notarium_search.cli.searching, notarium_search.index.space, notarium_search.service
before = "structlog" in sys.modules
get_logger("notarium_search.test").warning("first_line", answer=42)
print(json.dumps({"before": before, "after": "structlog" in sys.modules, "logged": stream.getvalue()}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(done.stdout.splitlines()[-1])
    assert (result["before"], result["after"]) == (False, True)
    line = json.loads(result["logged"])
    assert (line["event"], line["answer"], line["level"]) == ("first_line", 42, "warning")
