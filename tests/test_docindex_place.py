"""The index of a private folder never lands where another user can read it (issue 58, item 5): as root, with a
second local user (nobody, through setpriv) that owns the folder the user starts in and pre-creates the index file
there, world-readable and writable, under the name the index would take."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from docindex import index_path
from tests.fakes.cli import ROOT, clean_env

SECRET = "The merger closes on 14 March at 41 pence a share."
SETPRIV = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# What the other user runs: its folder, runs/docindex/ in it, and the index's file, all open to everyone.
PLANT = """import os, sys
os.umask(0)
folder = sys.argv[1]
os.makedirs(os.path.join(folder, "runs", "docindex"), mode=0o777)
fd = os.open(os.path.join(folder, "runs", "docindex", sys.argv[2]), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
os.close(fd)
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to act as a second local user (nobody)")
def test_indexing_from_a_folder_another_user_owns_is_refused_and_writes_nothing_there() -> None:
    base = Path(tempfile.mkdtemp(prefix="docindex-place-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        private = base / "private"
        private.mkdir(mode=0o700)
        (private / "deal.md").write_text(f"# Deal\n\n{SECRET}\n")
        theirs = base / "theirs"
        theirs.mkdir(mode=0o777)
        os.chmod(theirs, 0o777)
        name = index_path(private, theirs / "runs" / "docindex").name
        planted = subprocess.run([*SETPRIV, "/usr/bin/env", "python3", "-c", PLANT, str(theirs), name],
                                 capture_output=True, text=True, timeout=60)
        if planted.returncode != 0:
            pytest.skip(f"nobody cannot run python3 here: {planted.stderr.strip()[-200:]}")
        os.chown(theirs, 65534, 65534)  # the other user's folder (made by root to be reachable, then given away)
        index_file = theirs / "runs" / "docindex" / name
        assert index_file.stat().st_uid == 65534 and index_file.stat().st_mode & 0o777 == 0o666

        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "docs", "index", str(private)], cwd=theirs,
                              env=clean_env(), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"{name} belongs to another user (uid 65534)" in proc.stderr
        assert "AGENT_RUNS_DIR or --runs-dir" in proc.stderr
        assert index_file.stat().st_size == 0  # never written through
        assert sorted(p.name for p in (theirs / "runs" / "docindex").iterdir()) == [name]
        for path in theirs.rglob("*"):
            assert path.is_dir() or SECRET.encode() not in path.read_bytes()

        mine = base / "mine"  # the same command with a run store of the user's own indexes the folder
        found = subprocess.run([sys.executable, str(ROOT / "main.py"), "docs", "search", str(private), "merger",
                                "--runs-dir", str(mine)], cwd=theirs, env=clean_env(), capture_output=True,
                               text=True, timeout=120)
        assert found.returncode == 0 and "deal.md, § Deal" in found.stdout, found.stderr
        assert (mine / "docindex").stat().st_mode & 0o777 == 0o700
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_index_file_someone_else_linked_in_is_refused(tmp_path: Path) -> None:
    from core.errors import ConfigError
    from docindex.store import private

    elsewhere = tmp_path / "elsewhere.sqlite"
    elsewhere.write_bytes(b"")
    folder = tmp_path / "runs" / "docindex"
    folder.mkdir(parents=True)
    (folder / "docs-0123.sqlite").symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="docs-0123.sqlite is a link"):
        private(folder / "docs-0123.sqlite")
    assert elsewhere.read_bytes() == b""
