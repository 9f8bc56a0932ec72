"""Fragments/s through an embedding server (semantic/remote.py) against the
local pack, on the same texts: piaf-fr passages, embedded 64 at a time as the
space's writer hands them out (the remote path: batch × concurrency a call).

The server is tests/semantic/embed_server.py in a child process on
127.0.0.1, embedding with the same pack on every core: what is measured is
the cost of the HTTP path (JSON both ways, one more process) on one machine,
not a GPU's speed.

    python -m bench.remote_embedding PACK [--passages 512] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from notarium_search.logsetup import configure_logging
from notarium_search.semantic.embedding import load_embedder
from notarium_search.semantic.remote import RemoteEmbedder, load_remote_embedder

SLICE = 64  # semantic/channel.py SLICE_FRAGMENTS: what the writer hands a local pack at once
SERVER = """
import sys, time
from pathlib import Path
from notarium_search.logsetup import configure_logging
configure_logging("warning", sys.stderr)  # stdout carries the port alone
from tests.semantic.embed_server import EmbedServer
server = EmbedServer(Path(sys.argv[1]), threads=0)
server.start()
print(server.port, flush=True)
time.sleep(1e9)
"""


def passages(count: int) -> list[str]:
    corpus = Path(os.environ.get("NOTARIUM_EVAL_DIR", "../shared/eval")) / "piaf-fr" / "corpus.jsonl"
    texts = []
    with corpus.open(encoding="utf-8") as lines:
        for line in lines:
            texts.append(json.loads(line)["text"])
            if len(texts) == count:
                break
    return texts


def rate(embed: object, texts: list[str], step: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), step):
        embed(texts[start : start + step])  # type: ignore[operator]
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pack", type=Path)
    parser.add_argument("--passages", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    configure_logging("warning", sys.stderr)  # stdout is the report
    texts = passages(args.passages)
    local = load_embedder(args.pack)
    child = subprocess.Popen([sys.executable, "-c", SERVER, str(args.pack)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        url = f"http://127.0.0.1:{child.stdout.readline().strip()}/v1/embeddings"
        config = local.config
        remotes: dict[str, RemoteEmbedder] = {
            f"server, batch {b} x {c}": load_remote_embedder(url, config, "pack", batch_size=b, concurrency=c)
            for b, c in ((32, 4), (16, 1))
        }
        for round_ in range(args.rounds):  # alternated: the machine is shared
            print(f"round {round_ + 1}: local pack {rate(local.embed_passages, texts, SLICE):.1f} fragments/s")
            for name, remote in remotes.items():
                measured = rate(remote.embed_passages, texts, remote.bulk_fragments)
                print(f"round {round_ + 1}: {name} {measured:.1f} fragments/s")
    finally:
        child.terminate()
        child.wait()


if __name__ == "__main__":
    main()
