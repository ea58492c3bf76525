"""Bad settings, paths, tool modules and broken packages fail before the first model call (issue #10, items
11 and 14): one line, exit 2, no traceback, no request sent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import check_setup
import main
from config import load_settings
from core.errors import ConfigError
from tests.fakes.cli import GUARD, ROOT, clean_env
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import openai_reply, openai_script
from tools import dependencies


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A model that would answer at once; the tests check it is never asked."""
    (tmp_path / "tasks.txt").write_text("A task\n")
    with LoopbackServer(openai_script(openai_reply("Final Answer: 42"))) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        yield srv


def _fails_before_any_request(argv: list[str], srv: LoopbackServer, capsys: pytest.CaptureFixture[str]) -> str:
    code = main.main(["tasks.txt", "--model", "openai:m", "-q", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert srv.requests == [] and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    return err


# --- item 11: paths and --tools modules ----------------------------------------------------------------

@pytest.mark.parametrize("flag, setting", [("--workspace", "--workspace"), ("--trace-dir", "--trace-dir")])
def test_a_workspace_or_trace_dir_under_a_file_exits_2(model_server: LoopbackServer, tmp_path: Path, flag: str,
                                                       setting: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain-file").write_text("x")
    err = _fails_before_any_request([flag, "plain-file/sub"], model_server, capsys)
    assert setting in err and "plain-file/sub" in err


def test_an_output_under_a_file_exits_2(model_server: LoopbackServer, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain-file").write_text("x")
    err = _fails_before_any_request(["-o", "plain-file/results.md"], model_server, capsys)
    assert "plain-file" in err and "not a directory" in err


@pytest.mark.parametrize("body, expected", [
    ("def tools(settings, workspace):\n    return ['search the web']\n", "returned str 'search the web', not a Tool"),
    ("def tools(settings, workspace):\n    return [None]\n", "returned NoneType"),
    ("def tools(settings, workspace):\n    pass\n", "returned NoneType, not a list of Tool objects"),
    ("def tools(settings, workspace):\n    raise RuntimeError('needs MY_TOKEN')\n", "RuntimeError: needs MY_TOKEN"),
    ("from tools import tool\n@tool\ndef search(q: str) -> str:\n    '''Dup.'''\n    return q\n"
     "def tools(settings, workspace):\n    return [search]\n", "'search' is already registered"),
    ("from tools import Tool\nclass Bad(Tool):\n    name = 'bad'\n"
     "    parameters = {'type': 'object', 'properties': {'x': {'type': 'no-such-type'}}}\n"
     "def tools(settings, workspace):\n    return [Bad()]\n", "tool 'bad' cannot be used: 'no-such-type' is not valid"),
])
def test_a_tools_module_that_returns_no_tools_exits_2(model_server: LoopbackServer, tmp_path: Path, body: str,
                                                      expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "my_tools.py").write_text(body)
    err = _fails_before_any_request(["--tools", "my_tools.py"], model_server, capsys)
    assert "my_tools.py" in err and expected in err


# --- item 11: numbers, yes/no values and the .env file ---------------------------------------------------

@pytest.mark.parametrize("argv, env, named", [
    (["--task-timeout", "0"], {}, "--task-timeout"),
    (["--task-timeout", "-1"], {}, "--task-timeout"),
    (["--task-timeout", "nan"], {}, "--task-timeout"),
    ([], {"AGENT_MAX_TOKENS": "-5"}, "AGENT_MAX_TOKENS"),
    ([], {"AGENT_REQUEST_TIMEOUT": "0"}, "AGENT_REQUEST_TIMEOUT"),
    ([], {"AGENT_TEMPERATURE": "-0.5"}, "AGENT_TEMPERATURE"),
    ([], {"AGENT_MAX_RETRIES": "-1"}, "AGENT_MAX_RETRIES"),
    ([], {"AGENT_RETRY_DEADLINE": "-3"}, "AGENT_RETRY_DEADLINE"),
    ([], {"AGENT_MAX_RETRY_WAIT": "inf"}, "AGENT_MAX_RETRY_WAIT"),
    ([], {"SCRAPE_ALLOW_PRIVATE_URLS": "maybe"}, "SCRAPE_ALLOW_PRIVATE_URLS"),
])
def test_invalid_numbers_and_booleans_exit_2(model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch,
                                             argv: list[str], env: dict[str, str], named: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    err = _fails_before_any_request(argv, model_server, capsys)
    assert err.startswith("error: ") and named in err


@pytest.mark.parametrize("value, expected", [("yes", True), ("OFF", False), ("1", True), ("false", False)])
def test_boolean_spellings(value: str, expected: bool) -> None:
    assert load_settings(environ={"SCRAPE_ALLOW_PRIVATE_URLS": value}).scrape_allow_private is expected


def test_a_dotenv_that_is_not_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_bytes(b"AGENT_MAX_STEPS=5\nOPENAI_API_KEY=caf\xe9\n")
    with pytest.raises(ConfigError, match=r"\.env, line 2: not UTF-8"):
        load_settings(environ={}, env_file=env_file)


def test_a_dotenv_with_a_broken_line_names_it_without_showing_it(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text('AGENT_MAX_STEPS=5\nOPENAI_API_KEY="sk-secret-value\nAGENT_CONCURRENCY=2\n')
    with pytest.raises(ConfigError, match=r"\.env, line 2: cannot be read") as caught:
        load_settings(environ={}, env_file=env_file)
    assert "sk-secret" not in str(caught.value)


def test_an_empty_value_in_dotenv_counts_as_unset(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("OPENAI_BASE_URL=\nAGENT_MAX_STEPS=\nAGENT_MODEL=openai:m\n")
    settings = load_settings(environ={}, env_file=env_file)
    assert (settings.openai_base_url, settings.max_steps, settings.model) == (None, 15, "openai:m")


def test_a_broken_dotenv_through_the_cli_is_one_line(model_server: LoopbackServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.env").write_bytes(b"\xff\xfeA=1\n")
    monkeypatch.setenv("AGENT_ENV_FILE", str(tmp_path / "bad.env"))
    err = _fails_before_any_request([], model_server, capsys)
    assert "bad.env, line 1" in err


# --- item 14: packages that are missing or installed but broken ------------------------------------------

LXML_MESSAGE = ("lxml.html.clean module is now a separate project lxml_html_clean.\n"
                "Install lxml[html-clean] or lxml_html_clean directly.")


@pytest.fixture
def broken_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An importable-looking package that fails the way trafilatura does under pip 23.2 (lxml_html_clean)."""
    pkg = tmp_path / "site" / "fake_extractor"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"raise ImportError({LXML_MESSAGE!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield "fake_extractor"
    sys.modules.pop("fake_extractor", None)


def test_probe_tells_missing_from_installed_but_broken(broken_package: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dependencies.probe("no_such_package_xyz", "no-such-package")
    assert missing.state == "missing" and "pip install no-such-package" in missing.fix
    broken = dependencies.probe(broken_package, "fake-extractor")
    assert broken.state == "broken" and broken.fix.startswith("pip install lxml_html_clean")
    assert "installed but cannot be imported" in broken.message()
    (tmp_path / "site" / "needs_dep").mkdir()
    (tmp_path / "site" / "needs_dep" / "__init__.py").write_text("import some_sub_dependency_xyz\n")
    sub = dependencies.probe("needs_dep", "needs-dep")
    assert sub.state == "broken" and "pip install some_sub_dependency_xyz" in sub.fix


def test_check_setup_names_the_real_fix_for_a_broken_package(broken_package: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_setup, "REQUIRED", [(broken_package, "trafilatura")])
    [row] = [c for c in check_setup.check_packages() if c.name == "package trafilatura"]
    assert row.mark == check_setup.FAIL and row.detail.startswith("installed but broken")
    assert "pip install lxml_html_clean" in row.fix and "requirements.txt" not in row.fix


def test_a_tool_whose_package_is_missing_stops_the_run_before_the_first_request(
        model_server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(dependencies.TOOL_DEPENDENCIES, "scrape", (("no_such_extractor_xyz", "trafilatura"),))
    err = _fails_before_any_request([], model_server, capsys)
    assert "the scrape tool cannot work: trafilatura is not installed; fix: pip install trafilatura" in err


def test_a_tool_whose_package_is_broken_is_withheld_at_its_first_call_saying_why(
        broken_package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Installed but failing to import shows only when imported: at the tool's first call, not before the run
    # (importing every tool's packages up front would hold the first model request back by ~0.2 s).
    monkeypatch.setitem(dependencies.TOOL_DEPENDENCIES, "scrape", ((broken_package, "trafilatura"),))
    monkeypatch.setattr(dependencies, "_PROBLEMS", {})
    (tmp_path / "tasks.txt").write_text("First task\n\nSecond task\n")
    scrape = 'Action: scrape\nAction Input: {"url": "https://example.org/"}'
    script = openai_script(openai_reply(scrape), openai_reply("Final Answer: 42"), openai_reply("Final Answer: 43"))
    with LoopbackServer(script) as srv:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        code = main.main(["tasks.txt", "--model", "openai:m", "-q", "--concurrency", "1", "--no-search"])
    assert code == 0
    told = script.served[1].body.decode()
    assert "the scrape tool cannot work: trafilatura is installed but cannot be imported" in told
    assert "pip install lxml_html_clean" in told
    first, later = (script.served[i].json()["messages"][0]["content"] for i in (0, 2))
    assert "### scrape" in first and "### scrape" not in later  # the next task is not offered the tool


def test_requirements_list_lxml_html_clean_for_old_pips() -> None:
    text = (Path(__file__).resolve().parent.parent / "requirements.txt").read_text()
    assert any(line.startswith("lxml_html_clean>=") for line in text.splitlines())


def test_a_question_answered_at_once_imports_no_tools_package(tmp_path: Path) -> None:
    # Each tool's packages are checked installed, not imported; jsonschema, trafilatura, pypdf, lxml and httpx
    # load with the first call that needs them (here there is none), not before the first model request.
    script = openai_script(openai_reply("Final Answer: 42"))
    with LoopbackServer(script) as srv:
        done = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "main.py"), "ask", "What is six times "
                               "seven?", "--model", "openai:m", "-q"], cwd=tmp_path, env=clean_env(srv),
                              capture_output=True, text=True, timeout=GUARD)
    assert done.returncode == 0 and done.stdout.startswith("42"), done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in lines}
    assert {"openai", "tools", "agent"} <= imported  # -X importtime did list the imports ...
    assert imported & {"jsonschema", "trafilatura", "pypdf", "lxml", "httpx", "ddgs", "protego", "pygments"} == set()
