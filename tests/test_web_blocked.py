"""Challenge, CAPTCHA, login and paywall pages are named as blocked instead of being read as content."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import ReActAgent
from config import Settings
from tests.fakes.loopback import LoopbackServer, Response, routes
from tests.fakes.scripted import ScriptedLLM
from tools.base import ToolOutput
from tools.cached import cache_network_tools
from tools.web.blocked import blocked_kind
from tools.web.errors import BlockedPageError, SourceNotReadError
from tools.web.scrape import ScrapeTool

DATA = Path(__file__).parent / "data"
BLOCKED = DATA / "blocked"
ARTICLE = (DATA / "article.html").read_text(encoding="utf-8")


def _page(name: str, status: int = 200, **headers: str) -> Response:
    return Response(status, (BLOCKED / name).read_text(encoding="utf-8"), headers=headers,
                    content_type="text/html; charset=utf-8")


def make_tool(tmp_path: Path) -> ScrapeTool:
    settings = Settings(scrape_allow_private=True, scrape_timeout=2.0, ignore_robots=True, host_gap=0.0)
    return ScrapeTool(tmp_path / "ws", settings, sleep=lambda s: None)


CASES = [
    ("cloudflare-managed.html", 403, {"cf-mitigated": "challenge", "server": "cloudflare"}, "Cloudflare challenge"),
    ("cloudflare-managed.html", 200, {}, "Cloudflare challenge"),  # no header, a 200: the page itself says it
    ("cloudflare-js-2021.html", 503, {"server": "cloudflare"}, "Cloudflare challenge"),
    ("hcaptcha.html", 200, {}, "CAPTCHA (hCaptcha)"),
    ("recaptcha.html", 429, {}, "CAPTCHA (reCAPTCHA)"),
    ("akamai-denied.html", 403, {"server": "AkamaiGHost"}, "access denied"),
    ("paywall.html", 200, {}, "paywall"),
    ("login.html", 200, {}, "login wall"),
]


@pytest.mark.parametrize("name, status, headers, kind", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_blocked_pages_are_named_and_not_passed_on_as_content(tmp_path: Path, name: str, status: int,
                                                              headers: dict[str, str], kind: str) -> None:
    with LoopbackServer(routes({"/doc": _page(name, status, **headers)})) as server, \
            pytest.raises(BlockedPageError) as caught:
        make_tool(tmp_path).run(url=f"{server.url}/doc")
    error = caught.value
    assert error.kind == kind and error.url == f"{server.url}/doc"
    assert str(error).startswith(f"blocked: {kind}; try another source")
    assert isinstance(error, SourceNotReadError) and (error.status == status)
    assert len(server.requests) == (3 if status == 503 else 1)  # a 503 is retried like any other


def test_the_model_reads_blocked_and_the_page_is_not_a_source(tmp_path: Path) -> None:
    page = _page("cloudflare-managed.html", 403, **{"cf-mitigated": "challenge"})
    with LoopbackServer(routes({"/paper": page})) as server:
        llm = ScriptedLLM([f'Action: scrape\nAction Input: {{"url": "{server.url}/paper"}}', "Final Answer: none"])
        result = ReActAgent(llm, [make_tool(tmp_path)], max_steps=3).run("read the paper")
    observation = result.steps[0].observation
    assert observation.startswith("Error: blocked: Cloudflare challenge; try another source")
    assert "Enable JavaScript" not in observation and "_cf_chl_opt" not in observation
    assert result.sources == []


@pytest.mark.parametrize("page", [
    # An article with a reCAPTCHA-guarded comment form is still the article.
    ARTICLE.replace("</body>", '<form><div class="g-recaptcha" data-sitekey="x"></div></form>'
                               '<script src="https://www.google.com/recaptcha/api.js"></script></body>'),
    # A paywalled article whose text is served anyway (its structured data says so, its text is long).
    ARTICLE.replace("</head>", '<script type="application/ld+json">{"isAccessibleForFree": false}</script></head>'),
    # Cloudflare's bot-detection script sits on ordinary pages too.
    ARTICLE.replace("</body>", "<script>(function(){var a=document.createElement('script');a.src="
                               "'/cdn-cgi/challenge-platform/scripts/jsd/main.js';})();</script></body>"),
], ids=["recaptcha-comment-form", "paywall-markup-full-text", "cloudflare-jsd-script"])
def test_content_pages_with_weak_markers_are_read(tmp_path: Path, page: str) -> None:
    with LoopbackServer(routes({"/a": Response(body=page, content_type="text/html")})) as server:
        out = make_tool(tmp_path).run(url=f"{server.url}/a")
    assert isinstance(out, ToolOutput) and "Sleeper trains are making a comeback" in out.text


def test_a_plain_error_status_stays_an_http_error(tmp_path: Path) -> None:
    forbidden = Response(403, "<html><head><title>403 Forbidden</title></head><body><center><h1>403 Forbidden"
                              "</h1></center><hr><center>nginx</center></body></html>", content_type="text/html")
    with LoopbackServer(routes({"/x": forbidden})) as server:
        out = make_tool(tmp_path).run(url=f"{server.url}/x")
    assert out == f"Error: could not scrape {server.url}/x: the server answered HTTP 403 Forbidden"


def test_the_cloudflare_header_alone_names_a_challenge() -> None:
    assert blocked_kind(403, {"cf-mitigated": "challenge"}, "<html></html>") == "Cloudflare challenge"
    assert blocked_kind(403, {"server": "cloudflare"}, "<html><body>Forbidden</body></html>") is None


def test_a_recorded_challenge_page_is_named_again_under_replay(tmp_path: Path) -> None:
    page = _page("cloudflare-managed.html", 403, **{"cf-mitigated": "challenge"})
    with LoopbackServer(routes({"/paper": page})) as server:
        url = f"{server.url}/paper"
        recording = cache_network_tools([make_tool(tmp_path)], Settings(cache_dir=tmp_path / "cache"))[0]
        with pytest.raises(BlockedPageError):
            recording.run(url=url)
    replaying = cache_network_tools([make_tool(tmp_path)],
                                    Settings(cache_dir=tmp_path / "cache", cache_replay=True))[0]
    with pytest.raises(BlockedPageError) as caught:  # the server is gone: this comes from the cache
        replaying.run(url=url)
    assert caught.value.kind == "Cloudflare challenge"
