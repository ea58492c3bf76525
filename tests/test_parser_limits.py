"""Every parser of untrusted bytes runs in the converter's child, not in the agent (issue 58, item 6): look's images
and PDF page pictures, a ZIP archive's members, a fetched page's HTML. Through main.py with a scripted model: the
bombs of the issue (tests/fakes/bombs.py) cost the child, the agent answers, its observation names the limit, and
the agent's own peak memory (ru_maxrss of its process, not its children's: test_document_limits.run_measured)
stays small."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.fakes.bombs import pdf_image_bomb, png_bomb, zip_directory_bomb
from tests.fakes.cli import clean_env
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.test_document_limits import AGENT_PEAK_KB, MODEL, run_measured

SEEN_BY_VISION = "The picture is a grey square."


def model(tool: str, arguments: dict[str, str], answer: str, seen: list[str],
          images: list[int]) -> Callable[[Request], Response]:
    """A handler for the model's requests: the agent's model calls `tool` once, then answers; the look tool's
    vision request (its message carries images) is answered with SEEN_BY_VISION, the images it held counted."""
    def handle(req: Request) -> Response:
        messages = req.json()["messages"]
        parts = [p for m in messages if isinstance(m["content"], list) for p in m["content"]]
        if any(p.get("type") == "image_url" for p in parts):
            images.append(sum(p.get("type") == "image_url" for p in parts))
            return openai_reply(SEEN_BY_VISION)
        seen.append("\n".join(str(m["content"]) for m in messages))
        if not any(m["role"] == "assistant" for m in messages):
            return openai_reply(f"Thought: read it\nAction: {tool}\nAction Input: {json.dumps(arguments)}")
        return openai_reply(f"Final Answer: {answer}")
    return handle


def ask(tmp_path: Path, attachment: str, tool: str, arguments: dict[str, str], **settings: str) -> \
        tuple[int, str, str, int, list[int]]:
    """`main.py ask --file ATTACHMENT` with a model that calls `tool`: exit code, stderr, the prompt after the
    call (its observation), the agent's peak RSS in KB and the images each vision request held."""
    seen: list[str] = []
    images: list[int] = []
    with LoopbackServer(model(tool, arguments, "Done.", seen, images)) as server:
        proc, peak = run_measured(tmp_path, "ask", "What does the file show?", "--file", attachment, "--model",
                                  MODEL, "-q", env=clean_env(server, AGENT_SEARCH="0", **settings))
    return proc.returncode, proc.stderr, seen[-1] if seen else "", peak, images


def test_a_png_of_13000_by_13000_pixels_costs_looks_child_its_memory_not_the_agent(tmp_path: Path) -> None:
    (tmp_path / "huge.png").write_bytes(png_bomb())  # 500 KB that decode to 1.3 GB: the agent took 1,362 MB
    code, stderr, observation, peak, images = ask(tmp_path, "huge.png", "look",
                                                  {"path": "huge.png", "question": "What is drawn?"},
                                                  AGENT_DOC_MEMORY_MB="256")
    assert code == 0, stderr
    assert "the image needed more than 256 MB to decode (AGENT_DOC_MEMORY_MB)" in observation
    assert images == []  # nothing reached the vision model
    assert 0 < peak < AGENT_PEAK_KB, f"the agent's own peak was {peak // 1024} MB"


def test_a_pdf_page_naming_one_image_a_hundred_times_is_shown_from_one_reading(tmp_path: Path) -> None:
    (tmp_path / "scan.pdf").write_bytes(pdf_image_bomb())  # 32 s of the agent's CPU when each name was read
    code, stderr, observation, peak, images = ask(tmp_path, "scan.pdf", "look",
                                                  {"path": "scan.pdf", "question": "What is on page 1?"})
    assert code == 0, stderr
    assert SEEN_BY_VISION in observation and images == [1]  # the page's one picture, downscaled in the child
    assert 0 < peak < AGENT_PEAK_KB, f"the agent's own peak was {peak // 1024} MB"


def test_a_pdf_page_image_past_the_memory_limit_is_named_by_it(tmp_path: Path) -> None:
    (tmp_path / "scan.pdf").write_bytes(pdf_image_bomb(names=3, side=12_000))  # 144 MP: seconds to decode
    code, stderr, observation, _, images = ask(tmp_path, "scan.pdf", "look",
                                               {"path": "scan.pdf", "question": "What is on page 1?"},
                                               AGENT_DOC_MEMORY_MB="128")
    assert code == 0, stderr
    assert "the image needed more than 128 MB to decode (AGENT_DOC_MEMORY_MB)" in observation
    assert images == []


def test_a_zip_of_only_a_central_directory_is_refused_in_the_child_by_read_file_and_look(tmp_path: Path) -> None:
    (tmp_path / "many.zip").write_bytes(zip_directory_bomb())  # 95 MB: 931 MB and 13 s to list in the agent
    said = "the archive's directory of members is 95 MB, more than the 16 MB read here (a ZIP bomb?)"
    for tool, arguments in (("read_file", {"path": "many.zip"}), ("read_file", {"path": "many.zip/m000000001"}),
                            ("look", {"path": "many.zip/m000000001", "question": "What is it?"})):
        code, stderr, observation, peak, _ = ask(tmp_path, "many.zip", tool, arguments)
        assert code == 0, stderr
        assert said in observation, (tool, arguments, observation[-600:])
        assert 0 < peak < AGENT_PEAK_KB, f"{tool}: the agent's own peak was {peak // 1024} MB"


def test_a_large_fetched_page_is_parsed_in_the_child_and_named_by_its_limit(tmp_path: Path) -> None:
    page = ("<html><head><title>Many</title></head><body>" + "<div><p>word</p></div>" * 300_000
            + "</body></html>").encode()  # 7 MB of elements: trafilatura reads it for minutes
    seen: list[str] = []
    images: list[int] = []

    def handle(req: Request) -> Response:
        if req.path == "/many.html":
            return Response(200, page, content_type="text/html")
        if req.path.startswith("/v1/"):
            return model("scrape", {"url": f"{server.url}/many.html"}, "Done.", seen, images)(req)
        return Response(404, "not found")

    with LoopbackServer(handle) as server:
        env = clean_env(server, AGENT_DOC_TIMEOUT="3", SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0",
                        AGENT_SEARCH="0", SCRAPE_RENDER="off")
        proc, peak = run_measured(tmp_path, "ask", "What does the page say?", "--model", MODEL, "-q", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "the page took longer than 3 s to read (AGENT_DOC_TIMEOUT)" in seen[-1]
    assert 0 < peak < AGENT_PEAK_KB, f"the agent's own peak was {peak // 1024} MB"
