"""Filters typed in the query (typed_filters.py): every form, the texts that
must stay plain, and how they narrow the request's own filters."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from notarium_search.errors import InvalidFilter, InvalidParameter
from notarium_search.typed_filters import MAX_CONTAINS_CHARS, parse
from notarium_search.types import FeedFilter, TypedFilter


@pytest.mark.parametrize(
    ("query", "text", "filters"),
    [
        ("interop tag:ia", "interop", [("tag", "ia")]),
        ("tag:projet/dora résilience", "résilience", [("tag", "projet/dora")]),
        ("-tag:brouillon registre", "registre", [("-tag", "brouillon")]),
        ('tag:"mots clés" index', "index", [("tag", "mots clés")]),
        ("folder:lectures dora", "dora", [("folder", "lectures")]),
        ("path:lectures/vieux", "", [("path", "lectures/vieux")]),  # Obsidian's: the path contains it
        ('file:Agent section:"Mise en place" dora', "dora", [("file", "Agent"), ("section", "Mise en place")]),
        ("created-after:2024 Created-Before:2024-06", "", [("created-after", "2024"), ("created-before", "2024-06")]),
        ("TAG:IA Folder:zettel", "", [("tag", "IA"), ("folder", "zettel")]),
        ("after:2024-05 before:2024-06-01 bilan", "bilan", [("after", "2024-05"), ("before", "2024-06-01")]),
        ("tag:ia tag:standards", "", [("tag", "ia"), ("tag", "standards")]),
    ],
)
def test_every_form_is_read_and_taken_out_of_the_words(query: str, text: str, filters: list[tuple[str, str]]):
    typed = parse(query)
    assert typed.text == text
    assert typed.filters == tuple(TypedFilter(name, value) for name, value in filters)


@pytest.mark.parametrize(
    "query",
    [
        "arXiv:2104.08663",
        r"C:\temp",
        "12:30",
        "note:important",
        "voir tag: sans valeur",
        'tag:"" vide',
        "mytag:ia",  # the name must start the word
        "-folder:x",  # only tags can be excluded
        "-path:x",
        "recreated-after:2024",  # the name starts the word
        "created:2024",  # not a filter name (created-after, created-before are)
        'tag:"unterminated value',
    ],
)
def test_other_texts_with_a_colon_stay_plain(query: str):
    typed = parse(query)
    assert typed.filters == ()
    assert typed.text == query  # untouched, spacing included


def test_filters_narrow_the_request_filters():
    given = FeedFilter(tags=("ia",), since=datetime(2024, 1, 1, tzinfo=UTC))
    narrowed = parse("tag:standards -tag:vieux folder:zettel after:2023 before:2024-06").narrow(given)
    assert narrowed.tags == ("ia", "standards")  # every tag must match
    assert narrowed.exclude_tags == ("vieux",)
    assert narrowed.folder == "zettel"
    assert narrowed.since == datetime(2024, 1, 1, tzinfo=UTC)  # the later start wins
    assert narrowed.until == datetime(2024, 5, 31, 23, 59, 59, 999999, tzinfo=UTC)  # before June


@pytest.mark.parametrize(
    ("query", "since", "until"),
    [
        ("after:2024", datetime(2024, 1, 1, tzinfo=UTC), None),
        ("after:2024-12", datetime(2024, 12, 1, tzinfo=UTC), None),
        ("after:2024-02-29", datetime(2024, 2, 29, tzinfo=UTC), None),
        ("before:2025", None, datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("before:2024-03", None, datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)),
        # The last period a datetime holds: its end (year 10000) is never computed.
        ("after:9999", datetime(9999, 1, 1, tzinfo=UTC), None),
        ("after:9999-12", datetime(9999, 12, 1, tzinfo=UTC), None),
        ("after:9999-12-31", datetime(9999, 12, 31, tzinfo=UTC), None),
        ("before:0001-01-02", None, datetime(1, 1, 1, 23, 59, 59, 999999, tzinfo=UTC)),
    ],
)
def test_dates_are_periods(query: str, since: datetime | None, until: datetime | None):
    narrowed = parse(query).narrow(FeedFilter())
    assert (narrowed.since, narrowed.until) == (since, until)


@pytest.mark.parametrize("query", ["after:2024-13", "before:hier", "after:2023-02-29", "after:24-05"])
def test_a_date_that_is_not_one_is_refused_with_what_to_write(query: str):
    with pytest.raises(InvalidParameter, match="is not a date"):
        parse(query).narrow(FeedFilter())


@pytest.mark.parametrize("query", ["before:0001", "before:0001-01-01", "before:0001-01"])
def test_a_period_before_the_first_date_is_refused_with_why(query: str):
    with pytest.raises(InvalidParameter, match="no date is earlier than 0001-01-01"):
        parse(query).narrow(FeedFilter())


@pytest.mark.parametrize("query", ["after:0000", "before:0000-01-01"])
def test_year_zero_is_not_a_date(query: str):
    with pytest.raises(InvalidParameter, match="is not a date"):
        parse(query).narrow(FeedFilter())


def test_two_folders_are_refused_rather_than_silently_one():
    with pytest.raises(InvalidParameter, match="one folder at a time"):
        parse("folder:a folder:b").narrow(FeedFilter())
    with pytest.raises(InvalidParameter, match="one folder at a time"):
        parse("folder:a").narrow(FeedFilter(folder="b"))
    assert parse("folder:a").narrow(FeedFilter(folder="a/")).folder == "a"


def test_two_spellings_of_one_folder_are_one_folder():
    # Folders are matched ignoring case: `folder:Lectures` beside folder=lectures names one.
    assert parse("folder:Lectures").narrow(FeedFilter(folder="lectures")).folder == "lectures"
    assert parse("folder:Lectures folder:LECTURES/").narrow(FeedFilter()).folder == "Lectures"


def test_path_file_and_section_values_narrow_and_add_up():
    given = FeedFilter(paths=("a",))
    narrowed = parse("path:2024 file:bilan section:Intro path:Projets").narrow(given)
    assert (narrowed.paths, narrowed.files, narrowed.sections) == (("a", "2024", "Projets"), ("bilan",), ("Intro",))
    assert narrowed.folder is None  # `path:` is no longer a folder


def test_created_dates_are_periods_beside_the_updated_ones():
    narrowed = parse("created-after:2023-02 created-before:2024 after:2024-05").narrow(
        FeedFilter(created_since=datetime(2023, 6, 1, tzinfo=UTC))
    )
    assert narrowed.created_since == datetime(2023, 6, 1, tzinfo=UTC)  # the later start wins
    assert narrowed.created_until == datetime(2023, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert (narrowed.since, narrowed.until) == (datetime(2024, 5, 1, tzinfo=UTC), None)


@pytest.mark.parametrize(
    ("query", "name", "value", "reason"),
    [
        ("bilan after:2", "after", "2", "not_a_date"),  # while typing `after:2024`
        ("created-after:2024-1x", "created-after", "2024-1x", "not_a_date"),
        ("before:2023-02-29", "before", "2023-02-29", "not_a_date"),
        ("created-before:0001", "created-before", "0001", "before_the_first_date"),
        ("folder:a folder:b", "folder", "b", "one_folder_at_a_time"),
        ("path:" + "x" * (MAX_CONTAINS_CHARS + 1), "path", "x" * (MAX_CONTAINS_CHARS + 1), "too_long"),
    ],
)
def test_a_filter_that_cannot_be_read_names_itself_its_value_and_why(query: str, name: str, value: str, reason: str):
    with pytest.raises(InvalidFilter) as refused:
        parse(query).narrow(FeedFilter())
    assert (refused.value.name, refused.value.value, refused.value.reason) == (name, value, reason)
    assert (refused.value.status, refused.value.code) == (400, "invalid_filter")
    assert isinstance(refused.value, InvalidParameter)  # every front door refuses it as a bad parameter
