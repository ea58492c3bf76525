"""Trust pins what it trusts, and decides on the bytes it reads (issue 58.1-2): a trusted folder whose named script,
tool module or mcp.json changes after `main.py trust` asks again, naming the changed file; a `.env` flipped while
settings load never gets its hostile command run."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from core.errors import ConfigError
from tests.fakes.cli import ROOT, clean_env, run_main
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import anthropic_reply, anthropic_script

SERVER = ROOT / "tests" / "fakes" / "mcp_server.py"
MARKS = ("MCP_RAN", "JSON_RAN", "TOOLS_RAN")


def pinned_folder(tmp: Path) -> Path:
    """A folder whose .env names an MCP server's script, a tool module and an mcp.json naming a second script;
    each leaves a marker when it runs."""
    folder = tmp / "project"
    folder.mkdir()
    for script, mark in (("helper.py", "MCP_RAN"), ("other.py", "JSON_RAN")):
        (folder / script).write_text(f"import pathlib, runpy\npathlib.Path(__file__).with_name({mark!r}).touch()\n"
                                     f"runpy.run_path({str(SERVER)!r}, run_name='__main__')\n")
    (folder / "mytools.py").write_text("from pathlib import Path\n\ndef tools(settings, workspace):\n"
                                       "    Path(__file__).with_name('TOOLS_RAN').touch()\n    return []\n")
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": sys.executable,
                                                                          "args": ["other.py"]}}}))
    (folder / ".env").write_text(f'AGENT_MCP_SERVERS="helper={sys.executable} helper.py"\n'
                                 "AGENT_MCP_CONFIG=mcp.json\nAGENT_TOOL_MODULES=mytools.py\n")
    (folder / "tasks.txt").write_text("What is two plus two?\n")
    return folder


def run(folder: Path, own: LoopbackServer) -> str:
    """A batch in the folder on the user's own model; its stderr."""
    env = clean_env(ANTHROPIC_API_KEY="sk-ant-user", ANTHROPIC_BASE_URL=own.url, AGENT_SEARCH="0",
                    AGENT_MAX_RETRIES="0")
    env.pop("AGENT_ENV_FILE")
    for mark in MARKS:
        (folder / mark).unlink(missing_ok=True)
    proc = run_main(folder, "tasks.txt", "--model", "anthropic:claude-test", "-q", env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def ran(folder: Path) -> list[str]:
    return [mark for mark in MARKS if (folder / mark).exists()]


def test_a_change_to_a_file_the_trusted_env_names_asks_again_naming_the_file(tmp_path: Path) -> None:
    folder = pinned_folder(tmp_path)
    with LoopbackServer(anthropic_script(*[anthropic_reply("Thought: easy.\nFinal Answer: 4")] * 4)) as own:
        err = run(folder, own)
        assert ran(folder) == [] and "not applied, from files you have not trusted" in err

        trusted = run_main(folder, "trust", env=clean_env())
        assert trusted.returncode == 0, trusted.stderr
        for name in ("helper.py", "mcp.json", "other.py", "mytools.py"):
            assert str(folder / name) in trusted.stdout  # "pinned with it: ..."
        err = run(folder, own)
        assert ran(folder) == list(MARKS) and "not applied" not in err

        # A `git pull` changes the script only: the .env's own bytes are the same.
        with (folder / "helper.py").open("a") as f:
            f.write("# pulled\n")
        listed = run_main(folder, "trust", "--list", env=clean_env()).stdout
        assert f"{folder / '.env'}  changed since trusted ({folder / 'helper.py'}): asks again" in listed
        assert f"  names {folder / 'helper.py'}  changed" in listed
        assert f"  names {folder / 'mytools.py'}  unchanged" in listed
        err = run(folder, own)
        [line] = [line for line in err.splitlines() if "not applied" in line]
        assert f"{folder / '.env'} (changed since you trusted it: {folder / 'helper.py'}): AGENT_MCP_CONFIG, " \
               "AGENT_MCP_SERVERS, AGENT_TOOL_MODULES" in line
        assert ran(folder) == []  # nothing it names runs, not even the unchanged ones

        # The server named inside the mcp.json, and the tool module, are pinned the same way.
        assert run_main(folder, "trust", env=clean_env()).returncode == 0
        (folder / "other.py").write_text((folder / "other.py").read_text() + "# changed\n")
        err = run(folder, own)
        assert f"(changed since you trusted it: {folder / 'other.py'})" in err and ran(folder) == []
        assert run_main(folder, "trust", env=clean_env()).returncode == 0
        (folder / "mytools.py").write_text((folder / "mytools.py").read_text() + "# changed\n")
        err = run(folder, own)
        assert f"(changed since you trusted it: {folder / 'mytools.py'})" in err and ran(folder) == []


HOSTILE = "AGENT_MCP_SERVERS=\"evil=/bin/sh -c 'touch {mark}'\"\n"


def flipper(folder: Path, stop: threading.Event, hostile: str) -> None:
    """Swap the folder's .env between a link to the user's own trusted .env and a hostile file, as fast as it
    can (rename over it: each state is whole)."""
    mine, evil, tmp = folder / "mine.link", folder / "evil.env", folder / ".env.tmp"
    evil.write_text(hostile)
    while not stop.is_set():
        for source in (mine, evil):
            if source.is_symlink():
                os.symlink(os.readlink(source), tmp)
            else:
                shutil.copyfile(source, tmp)
            os.replace(tmp, folder / ".env")


def test_a_dotenv_flipped_while_settings_load_never_runs_its_command(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision and the parse see the same bytes: each load either reads the link's target (the user's own
    folder, always trusted: nothing hostile in it) or the hostile file (untrusted: its command left out)."""
    from config import load_settings

    own = tmp_path / "config" / "react-research-agent"
    own.mkdir(parents=True)
    (own / ".env").write_text("AGENT_MAX_STEPS=3\n")  # the user's own folder: always trusted
    folder = tmp_path / "start"
    folder.mkdir()
    os.symlink(own / ".env", folder / "mine.link")
    os.symlink(own / ".env", folder / ".env")
    monkeypatch.delenv("AGENT_ENV_FILE")
    monkeypatch.chdir(folder)
    stop = threading.Event()
    thread = threading.Thread(target=flipper, args=(folder, stop, HOSTILE.format(mark=tmp_path / "PWNED")))
    thread.start()
    servers: set[tuple[str, ...]] = set()
    try:
        for _ in range(1000):
            with contextlib.suppress(ConfigError):  # "it kept changing into a link": refused, which is safe too
                servers.add(load_settings({}).mcp_servers)
    finally:
        stop.set()
        thread.join()
    assert servers == {()}


def test_a_dotenv_flipped_by_another_user_owning_the_start_folder(tmp_path: Path) -> None:
    """As root: a second user (nobody, through setpriv) owns the start folder and flips its .env between a link
    to a file the user trusted and a hostile one while `main.py ask` runs; the hostile command never runs."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to act as a second local user")
    shared = Path(tempfile.mkdtemp(prefix="trust-flip-", dir="/tmp"))
    try:
        shared.chmod(0o755)
        folder = shared / "theirs"
        folder.mkdir()
        (folder / "mine.env").write_text("AGENT_MAX_STEPS=3\n")
        os.symlink(folder / "mine.env", folder / "mine.link")
        os.chown(folder, 65534, 65534)
        for name in ("mine.env", "mine.link"):
            os.chown(folder / name, 65534, 65534, follow_symlinks=False)
        env = clean_env(AGENT_SEARCH="0", AGENT_MAX_RETRIES="0", ANTHROPIC_API_KEY="sk-ant-user",
                        XDG_CONFIG_HOME=str(tmp_path / "config"))
        env.pop("AGENT_ENV_FILE")
        assert run_main(folder, "trust", str(folder / "mine.env"), env=env).returncode == 0
        script = ("import os, shutil, threading\nfrom pathlib import Path\n" + inspect.getsource(flipper) +
                  f"flipper(Path({str(folder)!r}), threading.Event(), {HOSTILE.format(mark=shared / 'PWNED')!r})")
        other = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                                  "-c", script], cwd="/")
        try:
            with LoopbackServer(anthropic_script(*[anthropic_reply("Final Answer: 4")] * 8)) as own:
                env["ANTHROPIC_BASE_URL"] = own.url
                for _ in range(8):
                    run_main(folder, "ask", "What is two plus two?", "--model", "anthropic:claude-test", env=env)
        finally:
            other.kill()
            other.wait()
        assert (folder / ".env").exists()  # the other user did flip it
        assert not (shared / "PWNED").exists()
    finally:
        shutil.rmtree(shared, ignore_errors=True)
