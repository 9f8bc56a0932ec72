"""Fusion of channel results into hits (fusion.ranking, carried, hits) and the exact-phrase test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from notarium_search import fusion
from notarium_search.fusion import PHRASE
from notarium_search.lexical.phrase import MAX_PHRASE_WORDS, phrase_test
from notarium_search.settings import FusionConfig
from notarium_search.types import ChannelHit, ChannelResult, NoteSummary, SearchHit, Snippet

WHEN = datetime(2024, 1, 1, tzinfo=UTC)
DEFAULT = FusionConfig()


def hit(note_id: str, score: float = 1.0, snippet: str | None = None, exact: bool = False) -> ChannelHit:
    note = NoteSummary(note_id, f"{note_id}.md", note_id.title(), (), "", WHEN, WHEN)
    snippets = (Snippet(snippet, (), snippet),) if snippet else ()
    return ChannelHit(note, score, snippets, exact=exact)


def result(channel: str, *hits: ChannelHit) -> ChannelResult:
    return ChannelResult(channel, hits)


def merge(results: list[ChannelResult], limit: int, config: FusionConfig) -> tuple[SearchHit, ...]:
    """What the service answers when the hits carry every note and their snippets."""
    ranked = fusion.ranking(results, config)
    notes, missing = fusion.carried(results, ranked)
    assert missing == []
    found = fusion.found_by(results)
    snippets = {
        i: fusion.merge_snippets(h.snippets for h in found[i].values()) for i in fusion.kept(ranked, notes, limit)
    }
    return fusion.hits(results, ranked, notes, snippets, limit)


def test_notes_known_by_id_only_are_fetched_by_the_caller_and_left_out_when_gone():
    """The graph channel knows its notes by id: `carried` names them, the
    caller fetches them (no callback into an index), and a note it cannot
    find (deleted meanwhile) is left out while the others keep their order."""
    lexical = result("lexical", hit("a", 5.0), hit("b", 4.0))
    graph = ChannelResult(
        "graph", (ChannelHit(None, 0.02, (), note_id="c"), ChannelHit(None, 0.01, (), note_id="gone"))
    )
    ranked = fusion.ranking([lexical, graph], DEFAULT)
    notes, missing = fusion.carried([lexical, graph], ranked)
    assert sorted(notes) == ["a", "b"]
    assert sorted(missing) == ["c", "gone"]
    notes["c"] = NoteSummary("c", "c.md", "C", (), "", WHEN, WHEN)  # what the caller fetched; "gone" is not found
    answer = fusion.hits([lexical, graph], ranked, notes, {}, 10)
    assert [h.note.id for h in answer] == [e.note_id for e in ranked if e.note_id != "gone"]
    assert answer[[h.note.id for h in answer].index("c")].channels == {"graph": 1}


def test_one_channel_keeps_its_order_and_scores():
    hits = merge([result("lexical", hit("a", 7.5), hit("b", 3.0)), result("semantic")], 10, DEFAULT)
    assert [(h.note.id, h.score, h.channels) for h in hits] == [("a", 7.5, {"lexical": 1}), ("b", 3.0, {"lexical": 2})]
    assert hits[0].trace["lexical"].contribution == hits[0].score


def test_trace_sums_to_the_score_and_keeps_channel_scores():
    lexical = result("lexical", hit("a", 9.0), hit("b", 4.0, exact=True))
    semantic = result("semantic", hit("b", 0.83), hit("c", 0.80))
    hits = merge([lexical, semantic], 10, DEFAULT)
    by_id = {h.note.id: h for h in hits}
    for h in hits:
        assert h.score == pytest.approx(sum(t.contribution for t in h.trace.values()))
    assert by_id["b"].trace["semantic"].score == 0.83
    assert by_id["b"].trace["lexical"].rank == 2
    assert by_id["b"].trace[PHRASE].rank == 1
    assert by_id["b"].channels == {"lexical": 2, "semantic": 1}  # the phrase list is not a channel
    assert [h.note.id for h in hits] == ["b", "a", "c"]


def test_weights_and_k_come_from_the_configuration():
    lexical = result("lexical", hit("a"), hit("b"))
    semantic = result("semantic", hit("b"), hit("a"))
    assert [h.note.id for h in merge([lexical, semantic], 10, FusionConfig(semantic_weight=2.0))] == ["b", "a"]
    assert [h.note.id for h in merge([lexical, semantic], 10, FusionConfig(lexical_weight=2.0))] == ["a", "b"]
    (top, _) = merge([lexical, semantic], 10, FusionConfig(k=10, lexical_weight=1.0))
    assert top.score == pytest.approx(1 / 11 + 1 / 12)


def test_exact_phrase_survives_a_disagreeing_semantic_channel():
    # "exact" is 3rd lexically and unknown to the semantic channel, whose
    # favourites are also lexical hits: without the phrase list it would fall
    # below them.
    lexical = result("lexical", hit("x"), hit("y"), hit("exact", exact=True))
    semantic = result("semantic", hit("x"), hit("y"), hit("z"))
    without = merge([lexical, semantic], 10, FusionConfig(phrase_weight=0.0))
    assert [h.note.id for h in without][:2] == ["x", "y"]
    ids = [h.note.id for h in merge([lexical, semantic], 10, DEFAULT)]
    assert ids.index("exact") < ids.index("z")
    assert ids.index("exact") <= 2


def test_snippets_are_merged_without_duplicates_lexical_first():
    lexical = result("lexical", hit("a", snippet="…le mot exact ici…"))
    semantic = result("semantic", hit("a", snippet="le mot exact ici"), hit("b", snippet="autre passage"))
    (a, b) = merge([lexical, semantic], 10, DEFAULT)
    assert [s.text for s in a.snippets] == ["…le mot exact ici…"]
    assert [s.text for s in b.snippets] == ["autre passage"]


def test_limit_and_empty_channels():
    assert merge([result("lexical"), result("semantic")], 10, DEFAULT) == ()
    lexical = result("lexical", *(hit(f"n{i}") for i in range(30)))
    semantic = result("semantic", *(hit(f"n{i}") for i in range(29, -1, -1)))
    assert len(merge([lexical, semantic], 5, DEFAULT)) == 5


@pytest.mark.parametrize(
    ("query", "title", "text", "expected"),
    [
        ("agent sans API", "Notes", "L'agent, sans api, est aveugle.", True),
        ("agent sans API", "Notes", "l'agent est sans API", False),
        ("Interopérabilité", "L'interopérabilité des agents", "", True),
        ("interopérabilité", "Notes", "de l'interopérabilité", False),  # one word: titles only
        ("interoperabilite", "L'interopérabilité", "", False),  # exact means exact accents
        ("C:\\temp", "Chemins", "copier dans C:\\temp puis", True),
        ('"x', "x", "", True),
        ("agent", "agents", "", False),  # whole words
    ],
)
def test_phrase_test(query: str, title: str, text: str, expected: bool):
    holds = phrase_test(query)
    assert holds is not None
    assert holds(title, text) is expected


def test_phrase_test_ignores_queries_without_a_phrase():
    assert phrase_test("") is None
    assert phrase_test("-- ?! ") is None
    assert phrase_test(" ".join(["mot"] * (MAX_PHRASE_WORDS + 1))) is None


def below_floor(note_id: str, score: float) -> ChannelHit:
    """A semantic hit below the relevance floor (semantic/search.py marks them)."""
    return ChannelHit(None, score, (), note_id=note_id, confident=False)


def test_a_hit_below_the_floor_never_lists_a_note_alone_but_adds_to_one_another_channel_found():
    lexical = result("lexical", hit("a", 5.0), hit("b", 4.0))
    semantic = ChannelResult("semantic", (below_floor("b", 0.80), below_floor("noise", 0.79), hit("c", 0.90)))
    ranked = fusion.ranking([lexical, semantic], DEFAULT)
    assert {e.note_id for e in ranked} == {"a", "b", "c"}  # "noise" only had a hit below the floor
    by_id = {e.note_id: e for e in ranked}
    assert set(by_id["b"].trace) == {"lexical", "semantic"}  # its semantic evidence still counts
    assert by_id["b"].trace["semantic"].amount > 0
    assert by_id["b"].score == sum(c.amount for c in by_id["b"].trace.values())
    notes, missing = fusion.carried([lexical, semantic], ranked)
    notes.update({i: NoteSummary(i, f"{i}.md", i, (), "", WHEN, WHEN) for i in missing})
    (b,) = [h for h in fusion.hits([lexical, semantic], ranked, notes, {}, 10) if h.note.id == "b"]
    assert b.trace["semantic"].confident is False
    assert b.trace["lexical"].confident is True


def test_a_channel_alone_with_every_hit_below_the_floor_answers_nothing():
    semantic = ChannelResult("semantic", (below_floor("x", 0.79), below_floor("y", 0.78)))
    assert fusion.ranking([result("lexical"), semantic], DEFAULT) == []
    mixed = ChannelResult("semantic", (hit("x", 0.91), below_floor("y", 0.78)))
    assert [e.note_id for e in fusion.ranking([result("lexical"), mixed], DEFAULT)] == ["x"]
