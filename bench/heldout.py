"""No-answer queries on held-out collections unlike the dev sets (issue 29, item 4).

The dev collections (../shared/eval: piaf-fr, French Wikipedia; cranfield,
aerodynamics abstracts) are where the relevance floor was tuned. This builds
collections of another kind from Debian packages (fetched with `apt-get
download`, unpacked with `dpkg-deb`; nothing is installed and nothing is
committed), with their own no-answer queries, and runs bench/noanswer.py on
each:

* `foldoc`: the Free On-line Dictionary of Computing (`dict-foldoc`), English
  technical prose, one note per entry;
* `gcide-science`: the entries of the GNU Collaborative International
  Dictionary of English (`dict-gcide`) marked (Med.), (Chem.), (Bot.),
  (Zool.), (Anat.), (Physiol.) or (Min.): English scientific vocabulary, Latin
  genus names, drugs and compounds: where a made-up word cut into sub-word
  pieces finds look-alikes;
* `manpages-de`: German manual pages (`manpages-de`), one note per section
  (cut at 1,200 characters): another language (indexed as `en`, the analyzer
  a German user would get here) and another domain.

2,500 notes each (1,000 manual sections: longer, they embed as 2.5 fragments
a note), sampled evenly from the package's entries.

Each gets, with a fixed seed, 60 `nonsense` queries (1-3 pronounceable
made-up words, none of which occurs in the corpus after lowercasing and
accent folding: the `nonsense` kind of ../shared/eval/noanswer) and everyday
questions (`out_of_domain`): cranfield's 15 of ../shared/eval/noanswer and 15
more here for the English collections, 20 German ones for manpages-de.

    python bench/heldout.py --work /tmp/heldout            # every collection
    python bench/heldout.py foldoc manpages-de --work /tmp/heldout --out /tmp/heldout.json

--work DIR keeps the packages, the collections (DIR/collections/NAME, in the
layout of ../shared/eval) and the indexes (DIR/NAME-MODEL), and reuses them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import noanswer
from notarium_search.logsetup import configure_logging

NOTES = 2_500  # per collection: a few thousand, embedded in minutes on 2 cores
NOTE_CHARS = 1_200  # a longer manual section is cut (at a space): 2 fragments at most, a build in minutes
NONSENSE = 60
SEED = 29
LANGUAGES = {"foldoc": "en", "gcide-science": "en", "manpages-de": "en"}
SIZES = {"manpages-de": 1_000}  # its sections are longer: 2.5 fragments a note
PACKAGES = {"foldoc": "dict-foldoc", "gcide-science": "dict-gcide", "manpages-de": "manpages-de"}
EVERYDAY_EN = (
    "how long to boil a soft egg",
    "when do cherry trees blossom in Japan",
    "how much to tip in a restaurant",
    "best time of year to visit Portugal",
    "how to fold a fitted sheet",
    "what to pack for a beach holiday",
    "how to get rid of ants in the kitchen",
    "why do cats purr",
    "how to clean a cast iron pan",
    "birthday party ideas for a six year old",
    "how to tie a tie",
    "what time does the post office close on Saturday",
    "how to make pancakes without eggs",
    "who won the football world cup in 1998",
    "how often should you water a cactus",
)
EVERYDAY_DE = (
    "Rezept für Apfelstrudel",
    "wie bringe ich meinem Hund bei, Sitz zu machen",
    "die schönsten Wanderwege in den Alpen",
    "Symptome einer Grippe bei Kindern",
    "wer hat die Mona Lisa gemalt",
    "wie strickt man einen Wollschal",
    "Steuererklärung für Selbstständige bis wann",
    "Text eines bekannten Liedes der Beatles",
    "Tomaten auf dem Balkon anbauen",
    "was bedeutet ein Traum von ausfallenden Zähnen",
    "am günstigsten Spanisch lernen",
    "Sauerteig selbst ansetzen",
    "Regeln des Kartenspiels Skat",
    "Geschichte des römischen Kaisers Nero",
    "Rotweinflecken entfernen",
    "wann blühen die Kirschbäume in Japan",
    "wie viel Trinkgeld gibt man im Restaurant",
    "wie lange kocht man ein weiches Ei",
    "warum schnurren Katzen",
    "Geschenkideen zum Muttertag",
)
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "tr", "pl", "gr", "st")
_VOWELS = ("a", "e", "i", "o", "u", "y", "ou", "ea")
_CODAS = ("", "", "", "n", "r", "s", "x", "m", "mp", "sh", "zz", "k", "t")
_WORD = re.compile(r"\w+")


def fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))


def fetch(package: str, cache: Path) -> Path:
    """The package's files, unpacked under `cache` (downloaded once)."""
    root = cache / package
    if root.exists():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        subprocess.run(["apt-get", "download", package], cwd=tmp, check=True, capture_output=True)
        (deb,) = Path(tmp).glob("*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(Path(tmp) / "x")], check=True)
        (Path(tmp) / "x").rename(root)
    return root


def _dict_entries(root: Path, name: str) -> Iterator[tuple[str, str]]:
    """(headword, entry text) of a dictd database, in index order, each entry once."""
    data = gzip.decompress((root / "usr/share/dictd" / f"{name}.dict.dz").read_bytes())
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def number(text: str) -> int:
        value = 0
        for char in text:
            value = value * 64 + digits.index(char)
        return value

    seen = set()
    for line in (root / "usr/share/dictd" / f"{name}.index").read_text(encoding="utf-8").splitlines():
        word, offset, length = line.split("\t")[:3]
        if word.startswith("00-database") or (offset, length) in seen:
            continue
        seen.add((offset, length))
        start = number(offset)
        yield word, data[start : start + number(length)].decode("utf-8", "replace")


def foldoc(root: Path) -> list[dict[str, str]]:
    docs: list[dict[str, str]] = []
    for word, entry in _dict_entries(root, "foldoc"):
        lines = entry.splitlines()
        text = re.sub(r"[{}]", "", " ".join(line.strip() for line in lines[1:]))
        text = re.sub(r"\s+", " ", re.sub(r"\(\d{4}-\d\d-\d\d\)", "", text)).strip()
        if len(text) >= 120:
            docs.append({"title": word, "text": text})
    return docs


_SCIENCE = re.compile(r"\((Med|Chem|Bot|Zool|Anat|Physiol|Min|Biol|Pharm)\.\)")


def gcide_science(root: Path) -> list[dict[str, str]]:
    docs: list[dict[str, str]] = []
    for word, entry in _dict_entries(root, "gcide"):
        if not _SCIENCE.search(entry):
            continue
        text = re.sub(r"\\[^\\\n]*\\", "", entry)  # pronunciations \A*ba"si*a\
        text = re.sub(r"\[[^\]]*(Webster|PJC|WordNet|Century|Note)[^\]]*\]", "", text)
        text = re.sub(r"\([^()]*\[[^()]*\)", "", text)  # ([.a]*b[=a]...) phonetics
        text = re.sub(r"\[[^\]]{0,12}\]", "", text)  # [=a] and other entities
        text = re.sub(r"[{}]", "", text)
        text = re.sub(r"\s+", " ", text).strip()
        if len(text) >= 80:
            docs.append({"title": word, "text": text})
    return docs


_ROFF_FONT = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")
_ROFF_ESCAPE = re.compile(r"\\(\(..|\[[^\]]*\]|\*\(..|\*.|s[-+]?\d|[&|^:/,%!~0e]|.)")
_ROFF_CHARS = {r"\(aq": "'", r"\(dq": '"', r"\(em": "—", r"\(en": "–", r"\(bu": "•", r"\(co": "©"}


def _roff_text(line: str) -> str:
    line = line.replace(r"\-", "-").replace(r"\e", "\\")
    for escape, char in _ROFF_CHARS.items():
        line = line.replace(escape, char)
    line = _ROFF_FONT.sub("", line)
    return _ROFF_ESCAPE.sub("", line)


def manpages(root: Path, language: str) -> list[dict[str, str]]:
    """One note per section (.SH) of each page: title `page(section): HEADING`."""
    docs: list[dict[str, str]] = []
    for page in sorted((root / "usr/share/man" / language).glob("man*/*.gz")):
        name = page.name.removesuffix(".gz")
        sections: list[tuple[str, list[str]]] = []
        for raw in gzip.decompress(page.read_bytes()).decode("utf-8", "replace").splitlines():
            if raw.startswith(".SH"):
                sections.append((_roff_text(raw[3:]).strip().strip('"'), []))
            elif not sections:
                continue
            elif raw.startswith((".", "'")):
                macro, _, rest = raw.partition(" ")
                if macro in (".B", ".I", ".BR", ".IR", ".RB", ".RI", ".BI", ".IB", ".SS", ".TP", ".IP"):
                    sections[-1][1].append(_roff_text(rest).replace('"', ""))
            else:
                sections[-1][1].append(_roff_text(raw))
        for heading, body in sections:
            text = re.sub(r"\s+", " ", " ".join(body)).strip()
            if heading and len(text) >= 120:
                docs.append({"title": f"{name}: {heading.title()}", "text": _cut(text)})
    return docs


BUILDERS: dict[str, Callable[[Path], list[dict[str, str]]]] = {
    "foldoc": foldoc,
    "gcide-science": gcide_science,
    "manpages-de": lambda root: manpages(root, "de"),
}


def made_up_word(rng: random.Random) -> str:
    syllables = rng.choice((2, 2, 3, 3, 4))
    word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
    return word + rng.choice(_CODAS)


def nonsense(vocabulary: set[str], rng: random.Random, count: int = NONSENSE) -> list[str]:
    """`count` queries of 1-3 made-up words, none of which is a word of the corpus."""
    queries: list[str] = []
    while len(queries) < count:
        words: list[str] = []
        size = rng.choice((1, 1, 1, 2, 2, 3))
        while len(words) < size:
            word = made_up_word(rng)
            if word not in vocabulary and len(word) >= 4:
                words.append(word)
        queries.append(" ".join(words))
    return queries


def write_collection(name: str, cache: Path, eval_dir: Path) -> Path:
    """DIR/collections/NAME/corpus.jsonl and noanswer/NAME.jsonl (kept, reused)."""
    folder = eval_dir / name
    if (folder / "corpus.jsonl").exists():
        return folder
    docs = BUILDERS[name](fetch(PACKAGES[name], cache))
    notes = SIZES.get(name, NOTES)
    docs = docs[:: max(1, len(docs) // notes)][:notes]
    vocabulary = {word for doc in docs for word in _WORD.findall(fold(doc["title"] + " " + doc["text"]))}
    rng = random.Random(f"{SEED}-{name}")
    made_up = nonsense(vocabulary, rng)
    queries = [{"id": f"nonsense-{i}", "text": text, "kind": "nonsense"} for i, text in enumerate(made_up)]
    if name == "manpages-de":
        everyday = list(EVERYDAY_DE)
    else:
        shared = noanswer.load_noanswer(Path("cranfield"), noanswer.EVAL_DIR)
        everyday = [q["text"] for q in shared if q["kind"] == "out_of_domain"] + list(EVERYDAY_EN)
    queries += [{"id": f"ood-{i}", "text": text, "kind": "out_of_domain"} for i, text in enumerate(everyday)]
    folder.mkdir(parents=True, exist_ok=True)
    (eval_dir / "noanswer").mkdir(exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for number, doc in enumerate(docs):
            handle.write(json.dumps({"id": f"{name}-{number}", **doc}, ensure_ascii=False) + "\n")
    with open(eval_dir / "noanswer" / f"{name}.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    return folder


def _cut(text: str) -> str:
    return text if len(text) <= NOTE_CHARS else text[: text.rfind(" ", 0, NOTE_CHARS)]


def summary(results: list[dict[str, Any]]) -> str:
    lines = [f"{'collection':<16}{'mode':<14}{'made-up: empty %':>18}{'everyday: sem-only@10':>23}"]
    for result in results:
        for mode, kinds in result["modes"].items():
            made_up = kinds.get("nonsense", {}).get("empty_pct")
            everyday = kinds.get("out_of_domain", {}).get(f"mean_semantic_only_top{noanswer.TOP}")
            lines.append(f"{result['collection']:<16}{mode:<14}{made_up!s:>18}{everyday!s:>23}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("collections", nargs="*", metavar="NAME", help=f"of {', '.join(BUILDERS)} (default: all)")
    parser.add_argument("--model", default=noanswer.DEFAULT_MODEL, metavar="DIR", help="embedding pack")
    parser.add_argument("--work", type=Path, help="keep packages, collections and indexes here, reuse them")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    if unknown := set(args.collections) - set(BUILDERS):
        parser.error(f"unknown collection(s): {', '.join(sorted(unknown))}")
    configure_logging("warning")
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        eval_dir = work / "collections"
        for name in args.collections or list(BUILDERS):
            folder = write_collection(name, work / "packages", eval_dir)
            options = noanswer.parse_args([str(folder), "--eval-dir", str(eval_dir), "--model", args.model])
            options.language = LANGUAGES[name]
            result = noanswer.run(options, work)
            print(noanswer.table(result) + "\n", flush=True)
            results.append(result)
    print(summary(results))
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
