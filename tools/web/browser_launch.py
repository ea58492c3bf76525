"""Which Chromium to start, with what flags and environment, and how to find and end its processes.

Playwright's own Chromium is used when it is installed, else the system's (`chromium` or
`chromium-browser` on PATH, the Debian package works), else SCRAPE_CHROMIUM names one. The browser gets
an environment of its own (no API key of the agent's, HOME in the run's browser directory) and a marker
variable, so that every process it starts can be found in /proc and ended with the run, even if the
Playwright driver is gone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import tempfile
from pathlib import Path

MARKER = "AGENT_BROWSER_RUN"
INSTALL_HINT = ("pip install -r requirements-browser.txt (Playwright), then either `python -m playwright install "
                "chromium` or the system's Chromium (Debian/Ubuntu: apt-get install chromium)")
# No QUIC (it would bypass the proxy), no WebRTC UDP outside the proxy, no background traffic of Chrome's own.
FLAGS = ("--disable-quic", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
         "--webrtc-ip-handling-policy=disable_non_proxied_udp", "--dns-prefetch-disable",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--disable-extensions", "--disable-breakpad", "--disable-crash-reporter",
         "--no-pings", "--disable-domain-reliability", "--disable-gpu", "--mute-audio")
SOCKET_DIR_LIMIT = 60  # Chromium's singleton socket lives in TMPDIR; a UNIX socket path has at most 107 bytes
_ENV_KEPT = ("PATH", "LANG", "LANGUAGE", "TZ", "FONTCONFIG_PATH", "FONTCONFIG_FILE")


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


def browser_env(run_dir: Path) -> dict[str, str]:
    """The browser's whole environment: a few neutral variables, HOME and caches in run_dir, the marker."""
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEPT or k.startswith("LC_")}
    for sub in ("home", "tmp", "cache", "config"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    tmp = run_dir / "tmp"
    if len(str(tmp)) > SOCKET_DIR_LIMIT and Path("/tmp").is_dir():  # Chromium's socket path would be too long
        tmp = Path(tempfile.mkdtemp(prefix="agb-", dir="/tmp"))
    env.update(HOME=str(run_dir / "home"), TMPDIR=str(tmp), XDG_CACHE_HOME=str(run_dir / "cache"),
               XDG_CONFIG_HOME=str(run_dir / "config"), **{MARKER: str(run_dir)})
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
