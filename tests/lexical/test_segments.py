"""When Tantivy's merge policy merges a space's segments (lexical/segments.py):
its levels computed as the policy does, checked against real merges."""

from __future__ import annotations

from pathlib import Path

import pytest
import tantivy

from notarium_search.lexical.segments import MIN_SEGMENTS_IN_MERGE, Segment, committed, levels, top_ups


def sizes(*notes: int) -> list[Segment]:
    return [Segment(n, n) for n in notes]


def test_a_first_index_of_50000_notes_is_one_level_merged_by_one_more_commit():
    first_index = sizes(15_691, 13_875, 9_216, 5_088, 2_940, 2_101, 1_089)  # measured (the module's docstring)
    assert [len(level) for level in levels(first_index)] == [7]
    assert top_ups(first_index) == 1


def test_small_segments_count_as_the_smallest_level():
    assert top_ups(sizes(1_500, 400)) == MIN_SEGMENTS_IN_MERGE - 2
    assert top_ups(sizes(50_000, 1, 1, 1)) == MIN_SEGMENTS_IN_MERGE - 3  # the large one is a level of its own
    assert [len(level) for level in levels(sizes(50_000, 1, 1, 1))] == [1, 3]


def test_nothing_to_do_for_one_segment_a_level_merging_already_or_a_level_a_note_would_not_join():
    assert top_ups([]) == 0
    assert top_ups(sizes(50_000)) == 0
    assert top_ups(sizes(50_000, 3)) == 0  # the lowest level holds one segment
    assert top_ups(sizes(*[900] * MIN_SEGMENTS_IN_MERGE)) == 0  # the policy merges these already
    # 20,000 and 12,000 notes are one level; a one-note segment would start the next.
    assert [len(level) for level in levels(sizes(20_000, 12_000))] == [2]
    assert top_ups(sizes(20_000, 12_000)) == 0


def test_deleted_notes_do_not_count_towards_a_segments_level():
    # 30,000 written, 25,000 of them deleted since: a level with the small ones.
    assert top_ups([Segment(30_000, 5_000), Segment(300, 300)]) == MIN_SEGMENTS_IN_MERGE - 2


@pytest.mark.parametrize("commits", [2, 5])
def test_the_predicted_commits_are_what_tantivy_merges_after(tmp_path: Path, commits: int):
    """Against Tantivy itself: `commits` one-note segments, then as many more
    as top_ups says: one fewer leaves them all, that many merge them into one."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    index = tantivy.Index(builder.build(), path=str(tmp_path))

    def commit(names: list[str]) -> None:
        """One segment each, then the writer's merges waited for."""
        writer = index.writer(15_000_000, 1)
        for name in names:
            writer.add_document(tantivy.Document(id=name))
            writer.commit()
        writer.wait_merging_threads()

    commit([f"n{i}" for i in range(commits)])
    assert len(committed(tmp_path)) == commits
    needed = top_ups(committed(tmp_path))
    assert needed == MIN_SEGMENTS_IN_MERGE - commits
    commit([f"more{i}" for i in range(needed - 1)])
    assert len(committed(tmp_path)) == MIN_SEGMENTS_IN_MERGE - 1
    commit(["last"])
    assert committed(tmp_path) == [Segment(MIN_SEGMENTS_IN_MERGE, MIN_SEGMENTS_IN_MERGE)]
