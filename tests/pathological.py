"""Pathological notes: what a clipped page, a paste or a generator can put in
a note, each shaped to push one of the parsers or renderers that read note
text (notes/markdown.py, notes/parse.py, notes/location.py,
lexical/snippets.py and word_matches.py, semantic/chunking.py, api/preview.py) past linear time
(issue 28).

Each note is about SIZE characters, a few a small multiple of it. At that
size the quadratic code these notes were written against runs for many
minutes or hours on the 2-core machine of issue 28 (each figure below was
measured at 25,000 and 100,000 characters, 16x apart, and is carried to the
note's size), while the linear code reads each in about a second at most: a
test's timeout separates the two without measuring a duration. Nothing here
is random: a failure reproduces.
"""

from __future__ import annotations

from collections.abc import Callable

SIZE = 1_000_000  # characters per note
LONG_LINE_CHARS = 5_000_000  # a 5 MB line, as a clipped page holds
DEPTH = 5_000  # lists and quotes nested this deep (the preview took 5.1 s at 2,000)
REFERENCES = 20_000  # reference links and their definitions (the preview took 9.7 s)


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


def _deep_list(size: int) -> str:
    """A list nested DEPTH deep on one line (`- - - … x`), then one item per line, 40 deep over and over."""
    return "- " * DEPTH + "x\n\n" + "\n".join("  " * (i % 40) + "- x" for i in range(size // 50)) + "\n"


def _deep_quote(size: int) -> str:
    return "> " * DEPTH + "x\n\n" + "\n".join(">" * (i % 50 + 1) + " x" for i in range(size // 30)) + "\n"


def _reference_links(size: int) -> str:
    uses = " ".join(f"[r{i}] [texte][r{i}] [r{i}][]" for i in range(REFERENCES))
    definitions = "\n".join(f"[r{i}]: https://example.org/{i} 'titre {i}'" for i in range(REFERENCES))
    return uses + "\n\n" + definitions + "\n"


def _long_headings(size: int) -> str:
    """Headings ending in long runs of `#` and blanks before a last word (the
    heading pattern's lazy text then `[ \\t#]*$`: 43 s at 100,000, so ~1 h),
    and one heading over half the note, which every fragment after it carried
    whole in its embedded text (200 MB at a million)."""
    return (
        "# " + "# " * (size // 4) + "x\n"
        "## a" + " " * (size // 4) + "b\n"
        "###### " + "#" * (size // 8) + "\n" + "#" * (size // 8) + "\n"
        "\n" + _repeat("Texte sous le long titre, phrase après phrase. ", size // 4)
    )


def _headings_not_held(size: int) -> str:
    """Headings the plain text does not hold as a line of their own (`# a|b`
    is the line "a b", `#   ` is empty), after a long line that starts with an
    earlier heading's text: each was searched for to the end of the text, an
    empty one character by character (24 s at 100,000, so ~40 min)."""
    return "x" * (size // 2) + "\n\n# x\n" + _repeat("# a|b\n#   \n# c  d\n", size // 2)


def _code(size: int) -> str:
    """Backtick runs of every length with paragraph breaks between; fences
    opened and never closed; indented code."""
    runs = " a\n\n".join("`" * n for n in range(1, 1 + int((size // 4) ** 0.5)))
    return runs + " b\n\n" + runs + "\n" + _repeat("    indented code\n", size // 4) + _repeat("```\n~~~~\n", size // 4)


def _code_blocks(size: int) -> str:
    """Fenced code blocks between paragraphs: each paragraph break looked at
    every code block (15 s at 100,000, so ~25 min)."""
    return _repeat("a\n\n```\nx\n```\n\n", size)


def _frontmatter(size: int) -> str:
    """Frontmatter values that are long strings and long lists, then a body
    of `---` lines."""
    tags = ", ".join(f"t{i}" for i in range(size // 20))
    return (
        "---\n"
        f"title: {'x' * (size // 10)}\n"
        f"created: 2024-01-01 10:00:00.{'0' * (size // 10)}{' ' * (size // 10)}x\n"
        f"updated: {'9' * (size // 10)}\n"
        f"tags: [{tags}]\n"
        f"aliases: {'a, ' * (size // 20)}\n"
        f"{'k' * (size // 10)}: v\n"
        "---\n" + _repeat("---\n", size // 10) + "corps\n"
    )


def _combining(size: int) -> str:
    """Combining marks out of canonical order (a "Zalgo" text), which NFC
    sorted by insertion (9.6 s at 100,000, so ~15 min, in one C call that no
    signal interrupts)."""
    return "a" + "\u0301\u0316" * (size // 2) + " " + _repeat("e\u0301\u0316 ", size // 4)


def _escaped_marks(size: int) -> str:
    """An alias of YAML-escaped combining marks: decoded after the note was
    taken to NFC, and normalised again by the link graph (NFKD: 3.1 s for
    40,000 marks, so ~8 min for the half million here)."""
    return '---\naliases: ["a' + "\\u0301\\u0316" * (size // 4) + '"]\n---\ncorps\n'


def _mixed(size: int) -> str:
    """Every opener at once, on one line and then one per line."""
    unit = "[[ [ ]( ( ` `` ~~ == ** __ <!-- %% <a <http: # #a > | \\ ![x]( "
    return _repeat(unit, size // 2) + "\n" + _repeat(unit.replace(" ", "\n"), size // 2)


# Name → note text for a size. Each comment: the code the note was shaped against.
GENERATORS: dict[str, Callable[[int], str]] = {
    # markdown links: `[^\]\n]*` from every `[` to the end of the line (3.6 s at 20,000, so ~2.5 h)
    "brackets": lambda size: "[" * size,
    "double brackets": lambda size: _repeat("[[", size),
    "closing brackets": lambda size: "]" * size,
    "bracket then parentheses": lambda size: "[a](" + "(" * size,
    "link openers": lambda size: _repeat("[a](b ", size),
    "parentheses": lambda size: "(" * size,
    "stars": lambda size: "*" * size,
    "underscores": lambda size: "_" * size,
    "backticks": lambda size: "`" * size,
    "backtick pairs": lambda size: _repeat("` ", size),
    "tildes": lambda size: "~" * size,
    "equals": lambda size: "=" * size,
    "less than": lambda size: "<" * size,
    "greater than": lambda size: ">" * size,
    "hashes": lambda size: "#" * size,
    "hash words": lambda size: _repeat("#1 ", size),
    # comments become blanks, a long blank line the table-rule pattern split two ways (6.5 s at 100,000: ~11 min)
    "percent": lambda size: "%" * size,
    # `<!--.*?-->` from every unclosed opener to the end (12.9 s at 100,000: ~20 min)
    "comment openers": lambda size: _repeat("<!--", size),
    "tag openers": lambda size: _repeat("<a ", size),
    "pipes": lambda size: "|" * size,
    "table rule": lambda size: "|" + " " * size + "x",
    "blanks": lambda size: "x\n" + " " * size + "\n" + "\t" * size + "x\n",
    "blank lines": lambda size: "a" + "\n" * size + "b",
    # sentence ends: from every dot of a run to its end (12.8 s at 25,000: ~6 h)
    "dots": lambda size: "a" + "." * size + "b",
    "closers": lambda size: "a." + ")" * size + "b",
    "deep list": _deep_list,
    "deep quote": _deep_quote,
    "reference links": _reference_links,
    "long headings": _long_headings,
    "headings not held": _headings_not_held,
    "code": _code,
    "code blocks": _code_blocks,
    "frontmatter": _frontmatter,
    "combining marks": _combining,
    "escaped marks": _escaped_marks,
    # line anchors: each line's first word, missing from the plain text, searched
    # across a long line before it (2.3 s at 100,000, so ~8 min at twice a million)
    "lines after a long line": lambda size: _repeat("mot ", 2 * size) + "\n" + _repeat("[[zz|yy]]\n", 2 * size),
    # each word after markup searched from the last word found (3.2 s at 100,000: ~12 min at three times)
    "links shown by their alias": lambda size: "debut " + _repeat("[[zz|..]] ", 3 * size),
    # each run of markup searched the line for the next word (100 s at 100,000: ~3 h)
    "spaced brackets": lambda size: "debut " + _repeat("[ ", size) + "fin",
    "short lines": lambda size: _repeat("[[a|b]]\n", size),
    "mixed": _mixed,
    "long line": lambda size: _repeat("mot [lien](x) ", LONG_LINE_CHARS),
}


def corpus(size: int = SIZE) -> dict[str, str]:
    """Note name → text, one note per pathological shape."""
    return {name: make(size) for name, make in GENERATORS.items()}


def file_name(name: str) -> str:
    """The note's file name in a vault: `deep list` → `deep-list.md`."""
    return name.replace(" ", "-") + ".md"
