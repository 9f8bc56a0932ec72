"""Which language a note is written in, among the languages its space reads.

A space set to `language = "auto"` analyses each note with its own
language's stemmer and stop words (lexical/analysis.py). The language comes
from the note's frontmatter (`lang:`, `language:` or `langue:`) when it
names one of the space's languages, else from its text by py3langid
restricted to those languages, else (too short to tell, or no confident
answer) it is the space's first language, its fallback.

Pure but for the detector's model, read once per process from the py3langid
wheel (nothing fetched), and only when a note needs it.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from py3langid.langid import LanguageIdentifier

# Part of the index fingerprint: a change of detector or of its thresholds
# changes which analyzer a note gets, so every space set to "auto" rebuilds.
DETECTOR = "py3langid0.9min40max300"
# Below this probability (py3langid's, normalised over the space's languages)
# the note gets the fallback. Measured (docs/ranking.md, bench/language_detection.py,
# piaf-fr and cranfield, 10,186 notes): at 0.9 no note of 40 characters or more
# is analysed in the wrong language, and 10-19 % of 40-character notes fall back;
# at 0.7, 0.4 % of French 40-character notes are wrong.
MIN_CONFIDENCE = 0.9
# Fewer letters than this cannot be told apart: titles alone were wrong for 2 %
# of piaf-fr's (Wikipedia names: "Berlin", "Acid Black Cherry").
MIN_LETTERS = 40
# Enough text to tell the language: on the 2,159 non-empty notes of piaf-fr and
# cranfield (900 characters on average), none wrong at 300, 500 or 1,000, for
# 0.11, 0.16 and 0.24 ms of CPU a note (bench/language_detection.py: from 100
# characters on, no note wrong).
MAX_DETECT_CHARS = 300
# Frontmatter keys naming a note's language, first found wins.
FRONTMATTER_KEYS = ("lang", "language", "langue")
# The names a frontmatter value may give beside an ISO 639-1 code or a BCP 47
# tag (fr-FR): ISO 639-2/3 codes and names in English, in the language itself and in French.
_NAMES = {
    "fr": "fra fre french français francais",
    "en": "eng english anglais",
    "ar": "ara arabic العربية arabe",
    "da": "dan danish dansk danois",
    "de": "deu ger german deutsch allemand",
    "el": "ell gre greek ελληνικά grec",
    "es": "spa spanish español espanol espagnol",
    "fi": "fin finnish suomi finnois",
    "hu": "hun hungarian magyar hongrois",
    "it": "ita italian italiano italien",
    "nl": "nld dut dutch nederlands néerlandais neerlandais",
    "no": "nor nob nno nb nn norwegian norsk norvégien norvegien",
    "pt": "por portuguese português portugues portugais",
    "ro": "ron rum romanian română romana roumain",
    "ru": "rus russian русский russe",
    "sv": "swe swedish svenska suédois suedois",
    "ta": "tam tamil தமிழ்",
    "tr": "tur turkish türkçe turkce turc",
}
_BY_NAME = {name: code for code, names in _NAMES.items() for name in (code, *names.split())}
# Its complement, removed: the letters left are counted with one string made
# instead of a list of one-letter strings (18 instead of 34 µs a note).
_NOT_LETTERS_RE = re.compile(r"[\W\d_]+")
_LOAD_LOCK = threading.Lock()


def declared(frontmatter: Mapping[str, Any]) -> str | None:
    """The language the frontmatter names (an ISO 639-1 code), if it names one we know."""
    for key in FRONTMATTER_KEYS:
        value = frontmatter.get(key)
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str) and value.strip():
            tag = value.strip().casefold()
            return _BY_NAME.get(tag) or _BY_NAME.get(re.split(r"[-_]", tag, maxsplit=1)[0])
    return None


def note_language(
    frontmatter: Mapping[str, Any], text: str, code_blocks: Sequence[tuple[int, int]], languages: Sequence[str]
) -> str:
    """The language of a note among `languages` (the first is the fallback)."""
    if len(languages) == 1:
        return languages[0]
    named = declared(frontmatter)
    if named is not None:
        return named if named in languages else languages[0]
    return detect(_prose(text, code_blocks), languages)


def detect(text: str, languages: Sequence[str]) -> str:
    """The language of `text` among `languages` when the detector is confident, else the first."""
    if len(_NOT_LETTERS_RE.sub("", text[:MAX_DETECT_CHARS])) < MIN_LETTERS:
        return languages[0]
    language, confidence = _identifier(tuple(sorted(languages))).classify(text[:MAX_DETECT_CHARS])
    return str(language) if confidence >= MIN_CONFIDENCE and language in languages else languages[0]


def _prose(text: str, code_blocks: Sequence[tuple[int, int]]) -> str:
    """The note's text without its code blocks (code reads as English), up to MAX_DETECT_CHARS."""
    if not code_blocks:
        return text[:MAX_DETECT_CHARS]
    parts, at = [], 0
    for start, end in code_blocks:
        parts.append(text[at:start])
        at = end
        if sum(map(len, parts)) >= MAX_DETECT_CHARS:
            break
    else:
        parts.append(text[at:])
    return " ".join(parts)[:MAX_DETECT_CHARS]


@functools.cache
def _identifier(languages: tuple[str, ...]) -> LanguageIdentifier:
    """A detector restricted to `languages`, read once per process and set of
    languages (0.6-1 s). The other 95 languages' columns are let go: 27 of its
    ~75 MiB (measured: 101 → 74 MiB with numpy's 26). set_languages keeps the
    whole model in `_full_model`, to restrict it again, which we never do.
    Its scores come from `feature_walk` (the same to the bit, faster)."""
    with _LOAD_LOCK:
        from py3langid.langid import MODEL_FILE

        from notarium_search.notes.feature_walk import WalkingIdentifier

        detector = WalkingIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    detector.set_languages(list(languages))
    detector._full_model = (detector.nb_ptc, detector.nb_pc, detector.nb_classes)
    detector.walk()
    return detector
