"""Which Chromium to start, as whom, with what flags and environment, and how to find and end its processes.

Playwright's own Chromium is used when it is installed, else the system's (`chromium` or
`chromium-browser` on PATH, the Debian package works), else SCRAPE_CHROMIUM names one. Playwright starts
it through a launcher script of the run's (prepare_launch): the script merges every --disable-features
list into one (Chromium keeps only the last, and Playwright passes its own), and when the agent runs as
root it starts Chromium as the unprivileged user `nobody` (setpriv), with Chromium's own sandbox where
user namespaces allow it, so that a renderer exploit is never code running as root. The browser gets an
environment of its own (no API key of the agent's, HOME in its own directory) and a marker variable, so
that every process it starts can be found in /proc and ended with the run, even if the Playwright driver
is gone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

MARKER = "AGENT_BROWSER_RUN"
INSTALL_HINT = ("pip install -r requirements-browser.txt (Playwright), then either `python -m playwright install "
                "chromium` or the system's Chromium (Debian/Ubuntu: apt-get install chromium)")
# No QUIC (it would bypass the proxy), no WebRTC UDP outside the proxy, no background traffic of Chrome's own.
FLAGS = ("--disable-quic", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
         "--webrtc-ip-handling-policy=disable_non_proxied_udp", "--dns-prefetch-disable",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--disable-breakpad", "--disable-crash-reporter",
         "--no-pings", "--disable-domain-reliability", "--disable-gpu", "--mute-audio",
         "--disable-features=AutofillServerCommunication")  # no form queries to content-autofill.googleapis.com
SOCKET_DIR_LIMIT = 60  # Chromium's singleton socket lives in TMPDIR; a UNIX socket path has at most 107 bytes
_ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "FONTCONFIG_PATH", "FONTCONFIG_FILE")
UNPRIVILEGED = "nobody"
_OWN_DIRS = ("home", "tmp", "cache", "config", "profile", "downloads")
_LAUNCHER = """#!/bin/sh
# Written by the agent (tools/web/browser/launch.py): one --disable-features list, then Chromium{as_whom}.
features=
for a do
  shift
  case $a in
    --disable-features=*) features=$features${{features:+,}}${{a#--disable-features=}} ;;
{profile}    *) set -- "$@" "$a" ;;
  esac
done
exec {drop}{chromium} "--disable-features=$features" "$@"
"""


@dataclass(frozen=True)
class Launch:
    """How the run's browser starts: the launcher Playwright runs, its environment, whether Chromium's own sandbox
    is on, the user it runs as, and its own directory (HOME, TMPDIR, caches, profile, downloads)."""

    executable: str
    env: dict[str, str]
    sandbox: bool
    user: str
    own: Path

    @property
    def downloads(self) -> Path:
        """Where Chromium writes downloads before they are moved (into a task's workspace) or removed."""
        return self.own / "downloads"


def playwright_missing() -> str | None:
    """Why Playwright cannot be imported (with the fix), or None when it can."""
    if importlib.util.find_spec("playwright") is None:
        return f"Playwright is not installed: {INSTALL_HINT}"
    return None


def system_chromium() -> str | None:
    """The system's Chromium on PATH, if any."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def choose_executable(playwright_own: str | None, configured: str | None) -> str | None:
    """The executable to launch; None means Playwright's own. RuntimeError (with the fix) when there is none."""
    if configured:
        if not Path(configured).is_file():
            raise RuntimeError(f"SCRAPE_CHROMIUM={configured} is not a file")
        return configured
    if playwright_own and Path(playwright_own).is_file():
        return None
    found = system_chromium()
    if found:
        return found
    raise RuntimeError(f"no Chromium found (neither Playwright's own nor chromium on PATH): {INSTALL_HINT}")


def prepare_launch(run_dir: Path, chromium: str) -> Launch:
    """The launcher script in run_dir (the agent's only) and the browser's own directory; as root, the browser's
    directory is made where `nobody` can reach it and given to that user. RuntimeError (with the fix) when root
    cannot drop privileges here."""
    sweep_left_behind()
    if os.geteuid() != 0:
        own, user, sandbox, drop = run_dir, pwd.getpwuid(os.geteuid()).pw_name, True, ""
        own_dirs(own, None)
    else:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise RuntimeError("the agent runs as root and the browser must not: install setpriv (util-linux) so it "
                               f"runs as {UNPRIVILEGED!r}")
        ids = _unprivileged_ids()
        own = Path(tempfile.mkdtemp(prefix=_own_prefix(), dir=_reachable_tmp()))
        own.chmod(0o711)  # nobody may pass through to its own directories, not list the others
        own_dirs(own, ids)
        drop = (f"{shlex.quote(setpriv)} --reuid={ids[0]} --regid={ids[1]} --clear-groups --no-new-privs "
                "--inh-caps=-all --bounding-set=-all -- ")
        user, sandbox = f"{UNPRIVILEGED} (uid {ids[0]})", _user_namespaces_work(drop)
    profile = (f"    --user-data-dir=*) set -- \"$@\" {shlex.quote('--user-data-dir=' + str(own / 'profile'))} ;;\n"
               if drop else "")
    script = run_dir / "chromium"
    script.write_text(_LAUNCHER.format(as_whom=f" as {UNPRIVILEGED}" if drop else "", profile=profile, drop=drop,
                                       chromium=shlex.quote(chromium)))
    script.chmod(0o700)
    return Launch(str(script), browser_env(own, run_dir), sandbox, user, own)


def _own_prefix() -> str:
    """The prefix of this agent's browser folders in a temporary directory."""
    return f"agb-{os.getpid()}-"


def sweep_left_behind() -> None:
    """Remove the browser folders (agb-PID-*) of agents that are gone: one killed with SIGKILL could not."""
    for folder in {_reachable_tmp(), "/tmp"}:
        for path in Path(folder).glob("agb-*-*"):
            owner = path.name.split("-")[1]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)


def own_dirs(own: Path, ids: tuple[int, int] | None) -> None:
    """The browser's writable directories, owned by the user it runs as."""
    for sub in _OWN_DIRS:
        (own / sub).mkdir(parents=True, exist_ok=True)
        if ids is not None:
            os.chown(own / sub, *ids)
            (own / sub).chmod(0o700)


def _unprivileged_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(UNPRIVILEGED)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def _reachable_tmp() -> str:
    """The temporary directory if every folder above it lets others pass and Chromium's socket path fits in it,
    else /tmp (a TMPDIR under a 0700 home, say)."""
    base = Path(tempfile.gettempdir()).resolve()
    if len(str(base)) + 20 <= SOCKET_DIR_LIMIT and all(p.stat().st_mode & 0o001 for p in (base, *base.parents)):
        return str(base)
    return "/tmp"


def _user_namespaces_work(drop: str) -> bool:
    """Whether the unprivileged user may make a user namespace here (Chromium's sandbox needs one)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        done = subprocess.run([*shlex.split(drop), unshare, "--user", "--map-root-user", "true"],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def browser_env(own: Path, run_dir: Path) -> dict[str, str]:
    """The browser's whole environment: a few neutral variables, HOME and caches in its own directory, the marker
    (the run's browser directory)."""
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEPT or k.startswith("LC_")}
    tmp = own / "tmp"
    if len(str(tmp)) > SOCKET_DIR_LIMIT and Path("/tmp").is_dir():  # Chromium's socket path would be too long
        tmp = Path(tempfile.mkdtemp(prefix=_own_prefix(), dir="/tmp"))
    env.update(HOME=str(own / "home"), TMPDIR=str(tmp), XDG_CACHE_HOME=str(own / "cache"),
               XDG_CONFIG_HOME=str(own / "config"), **{MARKER: str(run_dir)})
    return env


def driver_artifacts() -> set[str]:
    """The Playwright driver's scratch directories in the temporary directory it shares with this process."""
    return {str(p) for p in Path(tempfile.gettempdir()).glob("playwright-artifacts-*")}


def browser_processes(markers: list[str]) -> list[int]:
    """Live processes whose command line or environment holds one of the markers (the run's browser dirs)."""
    wanted = [m.encode() for m in markers if m]
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue  # dead, waiting for its parent to reap it
            seen = (entry / "cmdline").read_bytes()
            with contextlib.suppress(OSError):
                seen += (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        if any(m in seen for m in wanted):
            found.append(int(entry.name))
    return found


def profile_dir(pid: int) -> str | None:
    """The --user-data-dir Playwright gave the browser process pid."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for arg in args:
        if arg.startswith(b"--user-data-dir="):
            return arg.split(b"=", 1)[1].decode(errors="replace")
    return None


def group_leader(pid: int) -> bool:
    """True when pid leads its own process group (Playwright starts the browser so)."""
    try:
        return os.getpgid(pid) == pid
    except (ProcessLookupError, PermissionError):
        return False


def kill_all(pids: list[int]) -> None:
    """SIGKILL each process and its process group (the browser leads its own)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group_leader(pid):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class BrowserGroup:
    """The browser's process group as tools.processes tracks it, so a Ctrl-C ends it with the tool processes."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    @property
    def returncode(self) -> int | None:
        """None while the process lives."""
        return None if Path(f"/proc/{self.pid}").exists() else 0
