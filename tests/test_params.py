"""The front doors' input rules (params.py), shared by HTTP, MCP and the CLI."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from notarium_search import params
from notarium_search.errors import InvalidParameter


def test_text_is_stripped_bounded_and_blank_is_none():
    assert params.text("folder", "  Projets/DORA ") == "Projets/DORA"
    assert params.text("folder", "   ") is None
    assert params.text("folder", None) is None
    assert params.text("folder", "x" * params.MAX_FILTER_CHARS) == "x" * params.MAX_FILTER_CHARS
    with pytest.raises(InvalidParameter, match=f"^folder: at most {params.MAX_FILTER_CHARS} characters$"):
        params.text("folder", "x" * (params.MAX_FILTER_CHARS + 1))


def test_tags_drop_blanks_and_a_bare_hash():
    assert params.tags([" dora ", "", "#", "  ", "#ia"]) == ("dora", "#ia")
    assert params.tags(None) == ()
    with pytest.raises(InvalidParameter, match=r"^tag: at most"):
        params.tags(["t" * (params.MAX_FILTER_CHARS + 1)])


def test_names_drop_blanks_and_repeats_in_order():
    assert params.names("collection", ["livres", " livres ", "", "articles"]) == ("livres", "articles")


class TestDate:
    @pytest.mark.parametrize("value", [None, "", "   "])
    def test_blank_is_none(self, value):
        assert params.date("until", value) is None
        assert params.date("until", value, end_of_day=True) is None

    def test_unreadable_names_the_parameter(self):
        with pytest.raises(InvalidParameter, match="since: not a date 'hier'"):
            params.date("since", "hier")

    @pytest.mark.parametrize(
        "value", ["2024-05-01", " 2024-05-01 ", "20240501", "2024/05/01", "01/05/2024", "2024-5-1"]
    )
    def test_bare_date(self, value):
        assert params.date("since", value) == datetime(2024, 5, 1, tzinfo=UTC)
        # `until=2024-05-01` includes that whole day.
        assert params.date("until", value, end_of_day=True) == datetime(2024, 5, 1, 23, 59, 59, 999999, tzinfo=UTC)

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ("2024-05-01T00:00:00Z", datetime(2024, 5, 1, tzinfo=UTC)),
            ("2024-05-01T10:00:00+02:00", datetime(2024, 5, 1, 8, tzinfo=UTC)),
            ("2024-05-01 10:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
            ("202405011030", datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
            ("1714521600", datetime(2024, 5, 1, tzinfo=UTC)),  # epoch seconds: an instant, not a day
        ],
    )
    def test_a_time_is_kept_at_end_of_day(self, value, expected):
        assert params.date("until", value, end_of_day=True) == expected

    def test_last_day_of_the_calendar(self):
        result = params.date("until", "9999-12-31", end_of_day=True)
        assert result == datetime.max.replace(tzinfo=UTC)
