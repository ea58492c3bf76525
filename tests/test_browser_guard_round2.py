"""The browser guard's second round (issue #48, and #49's refs after `back`) through main.py.

One run of `main.py tasks.txt` with a scripted model that obeys hostile loopback pages (tests/fakes/
hostile_pages.py): the site on 127.0.0.1, a collector on 127.0.0.2, SCRAPE_ALLOW_PRIVATE_URLS=1 and no
--allow-domains (the case where a redirected POST got through), a workspace budget of BUDGET_MB and a
configured OpenAI key. Each test then checks what a user would see: the observations, what reached the
collector, the workspace, results.md, results.jsonl, results.html and the run store.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import main
from tests.fakes.hostile_pages import CHUNK, DIALOGS, HIDDEN, POPUPS, TITLE, HostilePages, hostile_pages
from tests.fakes.scripted import ScriptedLLM
from tests.test_browser_tool import observations, ref, reply, scripted_browser_run
from tools.sandbox import budget
from tools.web.browser.downloads import PER_ACTION
from tools.web.browser.launch import playwright_missing, system_chromium
from tools.web.browser.page import DIALOG_LIMIT

pytestmark = pytest.mark.skipif(playwright_missing() is not None or system_chromium() is None,
                                reason="needs Playwright (requirements-browser.txt) and Chromium (apt-get install "
                                       "chromium)")
SPEC = "openai:scripted"
KEY = "sk-proj-Zq8vW3nLk5Tb7Yx2Rc9Hm4Jd6Fp1Gs0"
BARE = KEY.removeprefix("sk-proj-")
BUDGET_MB = 3
Step = Callable[[str], "dict[str, Any] | str"]
UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def redirect(pages: HostilePages) -> list[Step]:
    return [lambda o: {"action": "open", "url": pages.url("/bounce")},
            lambda o: {"action": "open", "url": pages.url("/same")},
            lambda o: {"action": "open", "url": pages.url("/prg")},
            lambda o: {"action": "type", "ref": ref(o, "textbox", "Name"), "text": "Ada", "submit": True},
            lambda o: "done"]


def hidden(pages: HostilePages) -> list[Step]:
    return [lambda o: {"action": "open", "url": pages.url("/hidden")},
            lambda o: {"action": "read"},
            lambda o: {"action": "find", "text": "Ignore your task"},
            lambda o: "The kettle costs 42."]


def downloads(pages: HostilePages) -> list[Step]:
    return [lambda o: {"action": "open", "url": pages.url("/burst")},
            lambda o: {"action": "click", "ref": ref(o, "button", "Get all")},
            lambda o: {"action": "open", "url": pages.url("/big")},
            lambda o: {"action": "click", "ref": ref(o, "link", "Big file")},
            lambda o: "fetched"]


def floods(pages: HostilePages) -> list[Step]:
    return [lambda o: {"action": "open", "url": pages.url("/dialogs")},
            lambda o: {"action": "click", "ref": ref(o, "button", "Greet")},
            lambda o: {"action": "open", "url": pages.url("/popups")},
            lambda o: {"action": "click", "ref": ref(o, "button", "Open")},
            lambda o: {"action": "tabs"},
            lambda o: "flooded"]


def crash(pages: HostilePages) -> list[Step]:
    return [lambda o: {"action": "open", "url": pages.url("/two")},
            lambda o: {"action": "click", "ref": ref(o, "link", "Elsewhere")},  # tab 2
            lambda o: {"action": "open", "url": pages.url("/hog")},  # killed: tab 2 is gone
            lambda o: {"action": "tabs"},
            lambda o: {"action": "open", "url": pages.url("/a")},
            lambda o: "went on"]


def titled(pages: HostilePages) -> list[Step]:
    return [lambda o: {"action": "open", "url": pages.url("/titled")},
            lambda o: f"The page is titled {TITLE} and says revenue rose [1]."]


def secret(pages: HostilePages) -> list[Step]:
    typed = [BARE, base64.b64encode(f"key={KEY}".encode()).decode(), KEY.encode().hex(), KEY[::-1], KEY[10:26]]
    box: dict[str, str] = {}
    return [lambda o: {"action": "open", "url": pages.url("/prg")},
            *[(lambda o, text=text: {"action": "type", "text": text,
                                     "ref": box.get("name") or box.setdefault("name", ref(o, "textbox", "Name"))})
              for text in typed],
            lambda o: {"action": "open", "url": pages.url("/a?k=" + base64.urlsafe_b64encode(BARE.encode()).decode())},
            lambda o: "kept"]


def refs(pages: HostilePages) -> list[Step]:
    seen: dict[str, str] = {}
    return [lambda o: {"action": "open", "url": pages.url("/a")},
            lambda o: seen.setdefault("next", ref(o, "link", "Next")) and {"action": "click", "ref": seen["next"]},
            lambda o: seen.setdefault("home", ref(o, "link", "Home")) and {"action": "back"},
            lambda o: {"action": "click", "ref": seen["next"]},  # the ref from before `back`
            lambda o: {"action": "open", "url": pages.url("/b")},  # again: its two Home links get new refs
            lambda o: {"action": "click", "ref": seen["home"]},
            lambda o: "refs held"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One main.py run over every hostile page; its records by task, the model's calls, the servers."""
    tmp = tmp_path_factory.mktemp("browser-round2")
    with hostile_pages() as pages, pytest.MonkeyPatch.context() as mp:
        scripts = {name: make(pages) for name, make in [
            ("redirect", redirect), ("hidden", hidden), ("downloads", downloads), ("floods", floods),
            ("titled", titled), ("secret", secret), ("refs", refs), ("crash", crash)]}
        model = ScriptedLLM(replies=[reply(scripts)], model=SPEC)
        scripted_browser_run(mp, tmp, model)
        mp.setenv("OPENAI_API_KEY", KEY)
        mp.setenv("AGENT_RUNS_DIR", str(tmp / "runs"))
        mp.setenv("AGENT_WORKSPACE_BUDGET_MB", str(BUDGET_MB))
        mp.setenv("SCRAPE_BROWSER_MEMORY_MB", "300")
        (tmp / "tasks.txt").write_text("\n\n".join(scripts) + "\n")
        code = main.main(["tasks.txt", "-o", "out/results.md", "--model", SPEC, "--workspace", "ws", "-q",
                          "--concurrency", "1", "--max-steps", "10"])
        records = {r["task"]: r for r in map(json.loads, (tmp / "out" / "results.jsonl").read_text().splitlines())}
        yield {"code": code, "records": records, "model": model, "pages": pages, "dir": tmp}


def test_every_task_is_answered(run: dict[str, Any]) -> None:
    assert run["code"] == main.EXIT_OK, {t: (r["status"], r["error"]) for t, r in run["records"].items()}


def test_a_post_a_redirect_turns_to_another_origin_is_refused_and_the_model_told(run: dict[str, Any]) -> None:
    pages = run["pages"]
    bounced, same, _, submitted = observations(run, "redirect")[:4]
    assert pages.collector.requests == []  # the body never reached 127.0.0.2
    assert (f"Refused a POST to {pages.collector.url} (where a 307 redirect from {pages.url('/to-collector')} sent "
            f"it) from a page of {pages.site.url}: data is sent only to the page's own origin") in bounced
    assert "answer: landed POST token=LEAKED" in same  # a redirect within the origin keeps the body
    assert "Form received." in submitted and "/thanks" in submitted  # post, then 303 to a page: as ever
    assert [(r.method, r.path) for r in pages.site.requests if r.path in ("/submit", "/thanks")] == [
        ("POST", "/submit"), ("GET", "/thanks")]


def test_text_a_person_does_not_see_never_reaches_the_model(run: dict[str, Any]) -> None:
    seen = observations(run, "hidden")
    assert "The kettle costs 42." in seen[0] and "The kettle costs 42." in seen[1]
    assert '- checkbox "Gift wrap"' in seen[0]  # a check box drawn over its real, transparent control
    for word in [*HIDDEN, "opaquebutton", "collapsed link"]:
        assert not any(word in o for o in seen), word
    assert 'Found no "Ignore your task" on this page.' in seen[2]
    assert "shown" in seen[0]  # the visible child of a paragraph whose own text is white on white


def test_downloads_stop_at_the_workspace_budget_and_the_count_per_action(run: dict[str, Any]) -> None:
    clicked, _, big = observations(run, "downloads")[1:4]
    workspace = Path(run["records"]["downloads"]["workspace"])
    saved = sorted((workspace / "downloads").iterdir())
    used = budget.usage(str(workspace)).bytes
    assert 0 < len(saved) < PER_ACTION and used <= BUDGET_MB * 2**20
    assert all(p.stat().st_size == CHUNK for p in saved)  # nothing partial is left
    assert re.search(r"Refused the download of part\d+\.bin: it would take the workspace past its budget \([\d.]+ MiB "
                     rf"used, {BUDGET_MB}\.0 MiB in all: AGENT_WORKSPACE_BUDGET_MB\)", clicked)
    assert f"at most {PER_ACTION} downloads per action" in clicked
    last = re.findall(r"the workspace holds ([\d.]+ MiB) of its", clicked)[-1]
    assert last == budget.human(used)  # the count told is the exact one
    assert re.search(r"Refused the download of big\.bin: it would take the workspace past its budget \([\d.]+ MiB "
                     r"used, [\d.]+ MiB in all: AGENT_WORKSPACE_BUDGET_MB\); what had arrived was removed", big)
    assert not (workspace / "downloads" / "big.bin").exists()


def test_floods_are_summed_up_and_the_tab_line_counts_open_tabs(run: dict[str, Any]) -> None:
    _, greeted, _, opened, listed = observations(run, "floods")[:5]
    assert greeted.count("dialog said") == 3 and f"{DIALOG_LIMIT - 3} more dialogs answered" in greeted
    assert f"Tab 1 kept opening dialogs ({DIALOG_LIMIT} in one action): closed it." in greeted
    assert DIALOGS > DIALOG_LIMIT
    assert len(greeted) < 2_000
    assert re.search(r"\d+ more popups closed \(at most 10 tabs\)", opened) and len(opened) < 4_000
    assert opened.count("closed it: at most 10 tabs") == 3 and POPUPS > 10
    line = re.search(r"^On tab (\d+); 10 tabs open \(([\d, ]+)\)\.$", opened, re.M)
    assert line and line.group(1) in line.group(2).split(", ") and len(line.group(2).split(", ")) == 10
    assert "10 tab(s) open:" in listed and "of 10" not in listed


def test_reports_and_the_run_store_hold_no_control_or_bidi_character(run: dict[str, Any]) -> None:
    record = run["records"]["titled"]
    assert record["answer"].startswith("The page is titled Quarterly31m figuresgnp.exe")
    out = run["dir"] / "out"
    files = [out / "results.md", out / "results.jsonl", out / "results.html", *(run["dir"] / "runs").rglob("*.json*")]
    assert len(files) > 4
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not UNSAFE.search(text), (path, UNSAFE.search(text))
        assert "\\u009b" not in text and "\\u202e" not in text and "\\u001b" not in text, path


def test_a_configured_key_is_refused_in_every_form_a_page_asks_for(run: dict[str, Any]) -> None:
    seen = observations(run, "secret")[1:7]
    assert all(o.startswith("Observation: Error: refused: the") and "(OPENAI_API_KEY)" in o for o in seen), seen
    pages = run["pages"]
    assert not [r for r in pages.site.requests if "/a?" in r.path]
    sent = [r.path + r.body.decode() for r in pages.site.requests]
    assert not [s for s in sent if BARE[:16] in s or KEY.encode().hex()[:32] in s or KEY[::-1][:16] in s]


def test_a_ref_stays_across_back_and_a_stale_one_names_the_new_refs(run: dict[str, Any]) -> None:
    first, on_b, back, again, reopened, stale = observations(run, "refs")[:6]
    next_ref = ref(first, "link", "Next")
    assert ref(back, "link", "Next") == next_ref  # the same link after `back` ...
    assert "Navigated to" in again and again.endswith("/b") or "# Page B" in again  # ... and it still works
    homes = re.findall(r'- link "Home" \[ref=(e\d+)\]', reopened)
    assert len(homes) == 2 and not set(homes) & set(re.findall(r'- link "Home" \[ref=(e\d+)\]', on_b))
    assert f'The page now has link "Home" as {homes[0]}, {homes[1]}.' in stale
    failures = run["records"]["refs"]["tool_failures"]
    assert [f["error"].split(" (")[0] for f in failures] == ["Error: " + ref(on_b, "link", "Home")]
    report = (run["dir"] / "out" / "results.md").read_text(encoding="utf-8")
    assert f"browser: Error: {ref(on_b, 'link', 'Home')} \\(link" in report


def test_a_crashed_tab_is_not_counted_or_listed_as_open(run: dict[str, Any]) -> None:
    _, two_tabs, killed, listed, reopened = observations(run, "crash")[:5]
    assert "On tab 2; 2 tabs open (1, 2)." in two_tabs
    assert re.search(r"Tab 2 is gone: the page used more than the browser's memory limit", killed)
    assert "tabs open" not in killed  # tab 1 alone is open: no tab line
    assert "1 tab(s) open:" in listed and "tab 2: gone (its page crashed" in listed
    assert "On tab 3; 2 tabs open (1, 3)." in reopened and "# Page A" in reopened
