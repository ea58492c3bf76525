"""Redaction that sees through encodings (issue 58.10): a configured key wrapped over lines, with zero-width
characters or a soft hyphen inside, percent-encoded, base64-encoded (also wrapped as MIME wraps it), or in an
attachment's file name is redacted before the model, the terminal, the traces and the records see it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from core.secrets import SecretRedactor
from tests.fakes.cli import clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"
KEY = "sk-proj-Fake7Key0Zq8Jr2Lm4Nn6Pp8Qq0Rr2Ss4"
REST = KEY.removeprefix("sk-proj-")
MIME = base64.b64encode(f"user=harbour&api_key={KEY}&region=eu".encode()).decode()
ENCODED = {
    "wrapped": f"{KEY[:17]}\n{KEY[17:]}",
    "wrapped and indented": f"{KEY[:11]}   \n      {KEY[11:]}",
    "wrapped with CRLF": f"{KEY[:25]}\r\n{KEY[25:]}",
    "wrapped three times, indented": f"{KEY[:8]}\n\t{KEY[8:18]} \n    {KEY[18:30]}\n  {KEY[30:]}",
    "zero-width space": f"{KEY[:9]}\u200b{KEY[9:]}",
    "zero-width characters between all": "\u200c".join(KEY),
    "word joiner and BOM": f"{KEY[:6]}\u2060{KEY[6:20]}\ufeff{KEY[20:]}",
    "soft hyphen": f"{KEY[:14]}\u00ad{KEY[14:]}",
    "percent-encoded whole": "".join(f"%{ord(c):02X}" for c in KEY),
    "percent-encoded lower case": "".join(f"%{ord(c):02x}" for c in REST),
    "percent-encoded dashes": KEY.replace("-", "%2D"),
    "base64": base64.b64encode(KEY.encode()).decode(),
    "base64 inside a longer text": MIME,
    "base64 URL-safe, shifted": base64.urlsafe_b64encode(b"\x01\x02" + KEY.encode()).decode(),
    "base64 wrapped at 20": "\n".join(MIME[i:i + 20] for i in range(0, len(MIME), 20)),
    "base64 without padding": base64.b64encode(b"k" + KEY.encode()).decode().rstrip("="),
}


@pytest.mark.parametrize("form", list(ENCODED), ids=list(ENCODED))
def test_each_encoding_of_a_key_is_redacted_and_the_text_around_it_kept(form: str) -> None:
    redact = SecretRedactor({KEY: "OPENAI_API_KEY"})
    out = redact(f"Before the key: {ENCODED[form]} and after it.")
    assert out.startswith("Before the key: ") and out.endswith(" and after it.")
    assert "[redacted OPENAI_API_KEY]" in out
    assert _leaks(out) == []


def test_ordinary_text_and_other_base64_are_left_alone() -> None:
    redact = SecretRedactor({KEY: "OPENAI_API_KEY"})
    text = ("Revenue rose 4%\n  to 4.2 million.\u200b See https://example.org/a%20b?q=x%2Fy.\n"
            + base64.b64encode(b"an ordinary image that holds no key at all, only bytes").decode())
    assert redact(text) == text


def _leaks(text: str) -> list[str]:
    """Which encoded forms of the key (or the key, or its rest) are in a text."""
    return [name for name, form in {**ENCODED, "key": KEY, "rest": REST}.items()
            if form in text or form.lower() in text.lower()]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _text_of(path: Path) -> str:
    """A file's text, JSON documents and JSON lines decoded (so an escaped \\u200b is the character again)."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    try:
        return "\n".join(_strings(json.loads(raw)))
    except ValueError:
        pass
    decoded = []
    for line in raw.splitlines():
        try:
            decoded += _strings(json.loads(line))
        except ValueError:
            decoded.append(line)
    return "\n".join(decoded)


def test_encoded_keys_on_a_page_and_in_a_file_name_reach_no_model_terminal_trace_or_record(tmp_path: Path) -> None:
    page = "Deployment notes.\n" + "\n".join(f"{name}: {form} ." for name, form in ENCODED.items()) + \
        "\nThe cargo figure is 38.6 million tonnes.\n"
    seen: list[str] = []

    def model(req: Request) -> Response:
        messages = req.json()["messages"]
        seen.extend(str(m["content"]) for m in messages)
        if not any(m["role"] == "assistant" for m in messages):
            return openai_reply("Thought: read it.\nAction: scrape\nAction Input: "
                                + json.dumps({"url": f"{web.url}/notes"}))
        return openai_reply("Thought: done.\nFinal Answer: The cargo figure is 38.6 million tonnes [1].")

    attached = tmp_path / f"export-{KEY}.csv"
    attached.write_text("port,tonnes\nRotterdam,38.6\n")
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"question": "What is the cargo figure?",
                                                      "file": attached.name}) + "\n")
    with LoopbackServer(lambda req: Response(200, page, content_type="text/plain")) as web, \
            LoopbackServer(model) as server:
        proc = run_main(tmp_path, "tasks.jsonl", "--model", MODEL, "-v", "--ignore-robots",
                        env=clean_env(server, OPENAI_API_KEY=KEY, AGENT_SEARCH="0", SCRAPE_ALLOW_PRIVATE_URLS="1",
                                      SCRAPE_HOST_GAP="0"))
    assert proc.returncode == 0, proc.stderr
    prompt = "\n".join(seen)
    assert "Attached file: export-[redacted OPENAI_API_KEY].csv" in prompt  # named as staged
    assert "38.6 million tonnes" in prompt and prompt.count("[redacted OPENAI_API_KEY]") >= len(ENCODED)
    assert _leaks(prompt) == []
    assert _leaks(proc.stdout + proc.stderr) == []
    written = [p for p in (tmp_path / "runs").rglob("*") if p.is_file() and p.suffix in {".jsonl", ".json", ".md"}]
    written += [tmp_path / name for name in ("results.jsonl", "results.md")]
    assert any("traces" in p.parts for p in written)
    assert [(p.name, _leaks(_text_of(p))) for p in written if _leaks(_text_of(p))] == []
    staged = [p.name for p in (tmp_path / "runs").rglob("export-*.csv")]
    assert staged == ["export-[redacted OPENAI_API_KEY].csv"]


def test_docs_search_never_prints_a_key_a_file_is_named_with(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / f"harbour-{ENCODED['percent-encoded dashes']}.md").write_text("# Harbour\n\nThe quay budget is 7.5 "
                                                                         "million euros.\n")
    found = run_main(tmp_path, "docs", "search", str(docs), "quay budget", env=clean_env(OPENAI_API_KEY=KEY))
    assert found.returncode == 0, found.stderr
    assert "1. harbour-[redacted OPENAI_API_KEY].md" in found.stdout and "7.5 million" in found.stdout
    assert _leaks(found.stdout + found.stderr) == []
