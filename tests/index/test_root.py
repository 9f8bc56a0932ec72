"""The index folder's pre-flight check (index/root.py), through the real
command line: the commands that write indexes stop with one line when the
folder cannot be written, and the read-only ones never make it.

The image runs as uid 10001. The tests run as root, which any folder mode
lets write, so the child drops to 10001 first. It cannot simply be started
as that user: the interpreter may live where 10001 cannot reach it (here
under /root, mode 0700). It starts as root, imports what the commands import
before the check, drops to the user, then runs the command line's main: the
check and the command run as that user, as in the image. It reads as outside
a container unless told otherwise (this machine may be one: the wording
then depends on what is mounted where).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from notarium_search.cli.indexing import index_folders_writable
from notarium_search.index.root import PROBE_PREFIX, ensure_writable
from notarium_search.settings import load_settings
from tests.conftest import PROJECT_ROOT

USER = 10001  # the image's user and group
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root")

DROP_AND_RUN = """
import os, sys
from notarium_search import cli
from notarium_search.index import root as index_root
import notarium_search.api.server, notarium_search.mcp.server
import notarium_search.index.space, notarium_search.offline, rich.progress
uid, container = int(sys.argv[1]), sys.argv[2] == "container"
index_root.CONTAINER_MARKERS = (index_root.Path(os.devnull),) if container else ()
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
sys.exit(cli.main(sys.argv[3:]))
"""


@pytest.fixture
def shared() -> Iterator[Path]:
    """A temporary folder the unprivileged user can traverse (pytest's own
    base folder is root's, mode 0700), with a one-note space in it."""
    folder = Path(tempfile.mkdtemp(prefix="notarium-index-root-"))
    folder.chmod(0o755)
    notes = folder / "spaces" / "notes"
    notes.mkdir(parents=True)
    (notes / "a.md").write_text("---\nid: a\n---\nLe café du matin.\n", encoding="utf-8")
    for path in (folder / "spaces", notes):
        path.chmod(0o755)
    (notes / "a.md").chmod(0o644)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def run(
    shared: Path, index_dir: Path, *args: str, as_user: bool = True, container: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NOTARIUM_SPACES_ROOT": str(shared / "spaces"), "NOTARIUM_INDEX_DIR": str(index_dir)}
    env.pop("NOTARIUM_CONFIG", None)
    command = [sys.executable, "-c", DROP_AND_RUN, str(USER), "container" if container else "host", *args]
    if not as_user:
        command = [sys.executable, "-m", "notarium_search", *args]
    return subprocess.run(
        command, env=env, cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("notarium-search: "), stderr
    return lines[0]


def files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@ROOT_ONLY
@pytest.mark.parametrize("command", [["serve"], ["index", "notes"], ["mcp"]], ids=["serve", "index", "mcp"])
def test_a_folder_of_another_user_is_one_line_with_both_fixes(shared: Path, command: list[str]):
    index_dir = shared / "index"  # another user's, 0755: a host folder of its owner
    index_dir.mkdir(mode=0o755)
    os.chown(index_dir, 4242, 4242)
    notes_before = files_under(shared / "spaces")
    done = run(shared, index_dir, *command)
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert f"cannot write the index folder {index_dir} (owner uid 4242 gid 4242, mode 0755;" in line
    assert f"this process runs as uid {USER} gid {USER}" in line
    assert f"chown -R {USER}:{USER} {index_dir}" in line
    assert "docker run --user 4242:4242" in line
    assert done.stdout == ""  # nothing served, nothing indexed
    assert files_under(index_dir) == []
    assert files_under(shared / "spaces") == notes_before


@ROOT_ONLY
def test_a_missing_folder_names_the_folder_above_that_blocks_it(shared: Path):
    data = shared / "data"
    data.mkdir(mode=0o755)  # root's: 10001 cannot make index/ in it
    index_dir = data / "index"
    done = run(shared, index_dir, "index", "notes")
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert f"cannot create the index folder {index_dir}: {data} does not let this process write" in line
    assert "owner uid 0 gid 0, mode 0755" in line
    assert f"mkdir -p {index_dir} && chown -R {USER}:{USER} {index_dir}" in line
    assert "--user" not in line  # never "run as root" as a fix
    assert not index_dir.exists()


@contextmanager
def tmpfs(mount_point: Path, options: str) -> Iterator[None]:
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@ROOT_ONLY
def test_in_a_container_the_fix_names_the_mounted_host_folder(shared: Path):
    data = shared / "data"
    with tmpfs(data, "size=64k,mode=0755"):  # root's, like a host folder Docker made for `-v ~/idx:/data`
        done = run(shared, data / "index", "serve", container=True)
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert f"cannot create the index folder {data / 'index'}: {data} does not let this process write" in line
    assert (
        f"give the host folder mounted on {data} to this user (on the host: chown -R {USER}:{USER} that folder)" in line
    )
    assert "--user" not in line  # a root-owned folder is handed over, never "run as root"


@ROOT_ONLY
def test_a_space_folder_left_by_a_run_as_root_is_named_with_the_whole_folder_to_hand_over(shared: Path):
    index_dir = shared / "index"
    index_dir.mkdir(mode=0o755)
    os.chown(index_dir, USER, USER)
    (index_dir / "notes").mkdir(mode=0o755)  # root's, from an earlier `docker run --user 0:0`
    done = run(shared, index_dir, "index", "notes")
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert f"cannot write the index folder {index_dir / 'notes'} (owner uid 0 gid 0" in line
    assert f"give it to this user (chown -R {USER}:{USER} {index_dir})" in line


@ROOT_ONLY
def test_a_folder_of_this_user_is_indexed_and_the_check_leaves_nothing(shared: Path):
    data = shared / "data"
    data.mkdir(mode=0o755)
    os.chown(data, USER, USER)  # a volume the user owns: index/ is made in it
    notes_before = files_under(shared / "spaces")
    done = run(shared, data / "index", "index", "notes")
    assert done.returncode == 0, done.stderr
    assert "notes: 1 notes, 1 indexed" in done.stdout
    made = data / "index" / "notes" / "manifest.json"
    assert (made.stat().st_uid, made.stat().st_gid) == (USER, USER)
    assert not [p for p in files_under(data) if PROBE_PREFIX in p]
    assert files_under(shared / "spaces") == notes_before


def test_serve_checks_every_space_folder_and_leaves_only_the_folders(shared: Path):
    """`serve` runs the same check before granian starts; called directly here
    rather than starting a server."""
    index_dir = shared / "data" / "index"
    settings = load_settings(env={"NOTARIUM_SPACES_ROOT": str(shared / "spaces"), "NOTARIUM_INDEX_DIR": str(index_dir)})
    assert index_folders_writable(settings, settings.spaces)
    assert files_under(shared / "data") == ["index", "index/notes"]


def test_the_probe_leaves_an_existing_folder_as_it_was(tmp_path: Path):
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "kept.txt").write_text("x")
    ensure_writable(tmp_path / "index")
    assert files_under(tmp_path / "index") == ["kept.txt"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("ro,size=64k", "it is on a read-only file system (a volume or host folder mounted read-only)"),
        ("size=64k,nr_inodes=1", "ENOSPC (No space left on device)"),  # full: no inode left for index/
    ],
    ids=["read-only", "full"],
)
def test_a_read_only_or_full_file_system_is_one_line(shared: Path, options: str, expected: str):
    index_dir = shared / "mnt" / "index"
    with tmpfs(shared / "mnt", options):
        done = run(shared, index_dir, "index", "notes", as_user=False)
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert line == f"notarium-search: cannot write the index folder {index_dir}: {expected}" + (
        ": mount it read-write (no `:ro`)" if options.startswith("ro") else ""
    )


def test_search_and_status_never_make_the_index_folder(shared: Path):
    index_dir = shared / "index"
    found = run(shared, index_dir, "search", "notes", "café", as_user=False)
    assert found.returncode == 1
    assert "not indexed yet" in found.stderr
    status = run(shared, index_dir, "status", as_user=False)
    assert status.returncode == 0, status.stderr
    assert not index_dir.exists()
