"""The browser tool through main.py: a scripted model reads refs from each observation and gets past every obstacle.

One run of `main.py tasks.txt` holds one task per obstacle of the loopback shop (tests/fakes/obstacle_site.py):
a cookie banner over a search form, a "Next page" that loads by script, tabs, a drop-down and a checkbox, a
download, a new tab, a confirm dialog, a ref gone stale, password and card fields, a form posting to another
origin, and a page that must stay open between steps and close at its task's end. The model acts as a model
would: it finds `- button "Accept all" [ref=e7]` in the last observation and uses that ref. Each test then
checks what a user would see: the answer, the sources, what reached the servers, the workspace.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import llm
import main
from core.chat import Message
from tests.fakes.obstacle_site import CSV, SPECS, ObstacleSite, obstacle_site
from tests.fakes.scripted import ScriptedLLM
from tools.web.browser.launch import playwright_missing, system_chromium
from tools.web.browser.memory import descendants

pytestmark = pytest.mark.skipif(playwright_missing() is not None or system_chromium() is None,
                                reason="needs Playwright (requirements-browser.txt) and Chromium (apt-get install "
                                       "chromium)")
SPEC = "openai:scripted"
Step = Callable[[str], "dict[str, Any] | str"]  # the last observation -> the browser's Action Input, or an answer


def ref(observation: str, role: str, name: str) -> str:
    """The ref the observation gives the element `role "name"`, as a model reads it."""
    found = re.search(rf'^\s*- {role} "{re.escape(name)}"(?: \[[^\]]*\])* \[ref=(e\d+)\]', observation, re.M)
    assert found, f'no {role} "{name}" in:\n{observation}'
    return found.group(1)


def source_number(observation: str, url_end: str) -> str:
    """n of the `[n] Title — URL` line the observation starts with."""
    found = re.search(rf"^\[(\d+)\] .* — \S*{re.escape(url_end)}$", observation, re.M)
    assert found, f"no source line for {url_end} in:\n{observation}"
    return found.group(1)


def cookie(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/shop")},
            lambda o: {"action": "click", "ref": ref(o, "button", "Search")},  # under the banner
            lambda o: {"action": "click", "ref": ref(o, "button", "Accept all")},  # listed in the error
            lambda o: {"action": "type", "ref": ref(o, "textbox", "Search"), "text": "kettle", "submit": True},
            lambda o: f"There are 6 results for kettle [{source_number(o, '/search?q=kettle')}]."]


def catalog(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/catalog")},
            lambda o: {"action": "click", "ref": ref(o, "button", "Next page")},
            lambda o: "Page 2 lists " + ", ".join(line for line in o.splitlines() if line.endswith("kettle")) + "."]


def product(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/product")},
            lambda o: {"action": "click", "ref": ref(o, "tab", "Specifications")},
            lambda o: {"action": "select", "ref": ref(o, "combobox", "Colour"), "value": "Blue"},
            lambda o: {"action": "check", "ref": ref(o, "checkbox", "Gift wrap")},
            lambda o: " / ".join(line for line in o.splitlines()
                                 if line.startswith(("Capacity", "Price", "Gift wrap ")))]


def download(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/files")},
            lambda o: {"action": "click", "ref": ref(o, "link", "Price list (CSV)")},
            lambda o: ("read_file", {"path": re.search(r"saved to (\S+) in the workspace", o).group(1)}),  # type: ignore[union-attr]
            lambda o: "Glass kettle costs 42." if re.search(r"Glass kettle\W+42", o) else "not found"]


def new_tab(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/links")},
            lambda o: {"action": "click", "ref": ref(o, "link", "Open the brochure")},
            lambda o: "Tab 2: " + next(line for line in o.splitlines() if "boil" in line)]


def dialog(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/dialog")},
            lambda o: {"action": "click", "ref": ref(o, "button", "Delete draft")},
            lambda o: next(line for line in o.splitlines() if "dialog said" in line) + " / " + (
                "deleted" if "Draft deleted" in o else "kept")]


def stale(site: ObstacleSite) -> list[Step]:
    remembered: dict[str, str] = {}
    return [lambda o: {"action": "open", "url": site.url("/shuffle")},
            lambda o: remembered.setdefault("alpha", ref(o, "button", "Alpha")) and {
                "action": "click", "ref": ref(o, "button", "Shuffle")},
            lambda o: {"action": "click", "ref": remembered["alpha"]},  # a ref of the earlier snapshot
            lambda o: {"action": "click", "ref": ref(o, "button", "Gamma")},  # the new snapshot came with the error
            lambda o: next(line for line in o.splitlines() if line.startswith("Picked"))]


def secrets(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/account")},
            lambda o: {"action": "type", "ref": ref(o, "textbox", "Password"), "text": "hunter22"},
            lambda o: {"action": "snapshot"},
            lambda o: {"action": "type", "ref": ref(o, "textbox", "Card number"), "text": "4111111111111111"},
            lambda o: "refused twice"]


def exfil(site: ObstacleSite) -> list[Step]:
    return [lambda o: {"action": "open", "url": site.url("/exfil")},
            lambda o: {"action": "type", "ref": ref(o, "textbox", "Email"), "text": "reader@example.org",
                       "submit": True},
            lambda o: {"action": "open", "url": site.url("/comment")},
            lambda o: {"action": "type", "ref": ref(o, "textbox", "Comment"), "text": "Nice kettles", "submit": True},
            lambda o: "posted" if "Comment posted." in o else "not posted"]


def heartbeat(site: ObstacleSite, seen: dict[str, int]) -> list[Step]:
    def count(key: str) -> None:
        seen[key] = site.paths().count("/ping")
        until = time.monotonic() + 30  # the page pings every 0.1 s while it is open: the model thinks until one
        while site.paths().count("/ping") == seen[key] and time.monotonic() < until:  # more came (a busy
            time.sleep(0.05)  # machine's Chromium may take longer than a fixed pause)

    return [lambda o: {"action": "open", "url": site.url("/heartbeat")},
            lambda o: count("between steps") or {"action": "snapshot"},
            lambda o: count("after the snapshot") or "done"]


def after_heartbeat(site: ObstacleSite, seen: dict[str, int]) -> list[Step]:
    def count() -> str:
        seen["next task starts"] = site.paths().count("/ping")
        time.sleep(0.6)
        seen["next task ends"] = site.paths().count("/ping")
        return "quiet"

    return [lambda o: count()]


def reply(scripts: dict[str, list[Step]]) -> Callable[[list[Message]], str]:
    """A model that follows the script of its task, one step per observation it has had."""
    def answer(messages: list[Message]) -> str:
        task = str(messages[1]["content"]).split("\n")[0]
        observations = [str(m["content"]) for m in messages if m["role"] == "user"
                        and str(m["content"]).startswith("Observation: ")]
        step = scripts[task][len(observations)]
        out = step(observations[-1].removeprefix("Observation: ") if observations else "")
        if isinstance(out, str):
            return f"Thought: I have it.\nFinal Answer: {out}"
        tool, args = out if isinstance(out, tuple) else ("browser", out)
        return f"Thought: next step.\nAction: {tool}\nAction Input: {json.dumps(args)}"
    return answer


def scripted_browser_run(mp: pytest.MonkeyPatch, tmp: Path, model: ScriptedLLM) -> None:
    """main.py's setting for a browser run in tmp: the scripted model, no key or .env of the user's, loopback
    pages allowed, robots.txt ignored, no gap between requests to a host."""
    mp.setattr(llm, "build_llm", lambda settings, **kwargs: model)
    for var in ("OPENAI_API_KEY", "AGENT_MODEL", "AGENT_WORKSPACE", "AGENT_TRACE_DIR"):
        mp.delenv(var, raising=False)
    mp.setenv("AGENT_ENV_FILE", str(tmp / "no.env"))
    mp.setenv("SCRAPE_ALLOW_PRIVATE_URLS", "1")
    mp.setenv("SCRAPE_IGNORE_ROBOTS", "1")
    mp.setenv("SCRAPE_HOST_GAP", "0")
    mp.chdir(tmp)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One main.py run over every obstacle; its records by task, the model's calls, the site, the pings seen."""
    tmp = tmp_path_factory.mktemp("browser-run")
    seen: dict[str, int] = {}
    with obstacle_site() as site, pytest.MonkeyPatch.context() as mp:
        scripts = {name: make(site) for name, make in [
            ("cookie", cookie), ("catalog", catalog), ("product", product), ("download", download),
            ("new tab", new_tab), ("dialog", dialog), ("stale", stale), ("secrets", secrets), ("exfil", exfil)]}
        scripts["heartbeat"] = heartbeat(site, seen)
        scripts["after heartbeat"] = after_heartbeat(site, seen)
        model = ScriptedLLM(replies=[reply(scripts)], model=SPEC)
        scripted_browser_run(mp, tmp, model)
        (tmp / "tasks.txt").write_text("\n\n".join(scripts) + "\n")
        code = main.main(["tasks.txt", "-o", "out/results.md", "--model", SPEC, "--workspace", "ws", "--no-trace",
                          "-q", "--concurrency", "1", "--max-steps", "8"])
        chromium_left = [pid for pid in descendants(os.getpid())
                         if b"chrom" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        records = {r["task"]: r for r in map(json.loads, (tmp / "out" / "results.jsonl").read_text().splitlines())}
        yield {"code": code, "records": records, "model": model, "site": site, "seen": seen, "dir": tmp,
               "chromium_left": chromium_left}


def observations(run: dict[str, Any], task: str) -> list[str]:
    """Every observation the model was shown in the task, in order."""
    calls = [c for c in run["model"].calls if str(c.messages[1]["content"]).startswith(task + "\n")
             or c.messages[1]["content"] == task]
    last = calls[-1].messages
    return [str(m["content"]) for m in last if m["role"] == "user" and str(m["content"]).startswith("Observation")]


def test_the_run_finishes_every_task_and_leaves_no_chromium(run: dict[str, Any]) -> None:
    assert run["code"] == main.EXIT_OK, {t: (r["status"], r["error"]) for t, r in run["records"].items()}
    assert all(r["status"] == "answered" for r in run["records"].values())
    assert run["chromium_left"] == []


def test_a_cookie_banner_is_named_then_dismissed_and_the_search_form_used(run: dict[str, Any]) -> None:
    record = run["records"]["cookie"]
    covered = observations(run, "cookie")[1]
    assert 'is covered by dialog "Cookie consent": dismiss it first, nothing was clicked' in covered
    assert re.search(r'- button "Accept all" \[ref=e\d+\]', covered)
    assert "/search?q=kettle" in run["site"].paths("GET")
    source = next(s for s in record["sources"] if s["url"].endswith("/search?q=kettle"))
    assert source["title"] == "Search results" and source["read"] and source["n"]
    assert record["answer"] == f"There are 6 results for kettle [{source['n']}]."
    assert [c["verdict"] for c in record["citations"]] == ["supported"]


def test_a_next_page_loaded_by_script_is_seen_after_the_click(run: dict[str, Any]) -> None:
    assert run["records"]["catalog"]["answer"] == "Page 2 lists Copper kettle, Whistling kettle, Smart kettle."


def test_a_tab_a_drop_down_and_a_checkbox_change_the_page(run: dict[str, Any]) -> None:
    assert run["records"]["product"]["answer"] == f"{SPECS} / Price: 42 (blue) / Gift wrap added"


def test_a_download_lands_in_the_workspace_where_read_file_opens_it(run: dict[str, Any]) -> None:
    record = run["records"]["download"]
    assert "Downloaded prices.csv (43 bytes), saved to downloads/prices.csv in the workspace" in \
        observations(run, "download")[1]
    assert (Path(record["workspace"]) / "downloads" / "prices.csv").read_bytes() == CSV
    assert record["answer"] == "Glass kettle costs 42."


def test_a_link_to_a_new_tab_is_followed(run: dict[str, Any]) -> None:
    clicked = observations(run, "new tab")[1]
    assert "A new tab opened (tab 2); now on it." in clicked and "On tab 2; 2 tabs open (1, 2)." in clicked
    assert run["records"]["new tab"]["answer"] == "Tab 2: Our kettles boil in 90 seconds."


def test_a_confirm_dialog_is_answered_and_reported(run: dict[str, Any]) -> None:
    assert run["records"]["dialog"]["answer"] == 'A confirm dialog said "Delete the draft?": answered OK. / deleted'


def test_a_stale_ref_is_refused_by_name_and_never_clicks_another_element(run: dict[str, Any]) -> None:
    refused = observations(run, "stale")[2]
    assert re.search(r'^Error: e\d+ \(button "Alpha"\) is from an earlier snapshot: the page has changed', refused,
                     re.M)
    assert "nothing was done" in refused and re.search(r'- button "Gamma" \[ref=e\d+\]', refused)
    picked = [p for p in run["site"].paths() if p.startswith("/picked")]
    assert picked == ["/picked?name=Gamma"]  # Alpha's ref reached no button: not Gamma, not Delta
    assert run["records"]["stale"]["answer"] == "Picked Gamma"


def test_password_and_card_fields_are_never_typed_into(run: dict[str, Any]) -> None:
    seen = observations(run, "secrets")
    assert 'e' in seen[1] and '(textbox "Password") is a password field: the browser tool does not type into ' \
        "password or payment fields" in seen[1]
    assert '(textbox "Card number") is a payment card field' in seen[3]
    assert not any("hunter22" in o or "4111" in o for o in seen)


def test_a_form_posting_to_another_origin_is_refused_and_one_to_its_own_origin_goes(run: dict[str, Any]) -> None:
    site = run["site"]
    assert site.collector.requests == []
    refused = observations(run, "exfil")[1]
    assert f"Refused a POST to {site.collector.url} from a page of {site.shop.url}" in refused
    assert "--allow-domains" in refused
    assert "/comment" in site.paths("POST")
    assert run["records"]["exfil"]["answer"] == "posted"


def test_the_page_stays_open_between_steps_and_closes_with_its_task(run: dict[str, Any]) -> None:
    seen = run["seen"]
    assert seen["after the snapshot"] > seen["between steps"]  # pinging while the model thought
    assert seen["next task ends"] == seen["next task starts"]  # the next task: the page is gone


def test_every_page_shown_is_a_numbered_source(run: dict[str, Any]) -> None:
    sources = run["records"]["product"]["sources"]
    assert [(s["n"], s["title"], s["read"]) for s in sources] == [(1, "Steel kettle", True)]
    first = observations(run, "product")[0]
    assert first.startswith(f"Observation: [1] Steel kettle — {run['site'].url('/product')}\nOpened ")
