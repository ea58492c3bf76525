"""Loopback stand-ins for OpenAlex, Semantic Scholar and Crossref answering their recorded bodies
(tests/fixtures/real_api/scholarly.json), and for the publisher serving a paper's open-access PDF.

One server plays them all under path prefixes: OPENALEX_BASE_URL is {url}/openalex, SEMANTIC_SCHOLAR_BASE_URL
{url}/s2, CROSSREF_BASE_URL {url}/crossref; the publisher's addresses in the recorded bodies
(https://www.nature.com/...) are rewritten to {url}/publisher/..., where the PDF is served. Each service's answer
is a fixture name, a Response or a function of the request (set `answers[...]`); every request is kept.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from config import Settings
from tests.fakes.documents import pages_pdf_bytes
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.real_traffic import FIXTURES

DOI = "10.1038/s42256-024-00832-8"  # the recorded OpenAlex answer's first work (ChemCrow, Nature Machine Intelligence)
PDF_PATH = "/publisher/articles/s42256-024-00832-8.pdf"
# The paper's PDF as the stand-in publisher serves it: its title page, then a page holding a statement its
# abstract does not make (so a claim from it is found on that page only).
PDF_PAGES = [["Augmenting large language models with chemistry tools",
              "Andres M. Bran, Sam Cox, Oliver Schilter, Carlo Baldassari, Andrew D. White, Philippe Schwaller"],
             ["ChemCrow planned the synthesis of DEET, an insect repellent,",
              "which the RoboRXN platform then carried out."],
             ["Eighteen expert-designed tools were given to the agent."]]
Answer = str | Response | Callable[[Request], Response]


def recorded(name: str) -> dict[str, Any]:
    """One entry of scholarly.json (status, headers, body), a copy."""
    return copy.deepcopy(json.loads((FIXTURES / "scholarly.json").read_text(encoding="utf-8"))[name])


@dataclass
class Scholarly:
    """The three services and the publisher; `answers` maps openalex, openalex_doi, s2, crossref and pdf to what
    each answers."""

    answers: dict[str, Answer] = field(default_factory=lambda: {
        "openalex": "openalex_works_search", "openalex_doi": "openalex_work", "s2": "semantic_scholar_paper_search",
        "crossref": "crossref_works_query", "pdf": Response(200, pages_pdf_bytes(PDF_PAGES),
                                                           content_type="application/pdf")})
    latency: float = 0.0  # seconds each service takes to answer (the benchmark's fixed latency)
    url: str = ""
    requests: list[tuple[float, str, Request]] = field(default_factory=list)  # (time, service, request)

    def __call__(self, req: Request) -> Response:
        service = self.service(urlsplit(req.path).path)
        self.requests.append((time.time(), service, req))
        answer = self.answers.get(service)
        if answer is None:
            return Response(404, "<html><body>Not found</body></html>", content_type="text/html")
        response = answer(req) if callable(answer) else answer if isinstance(answer, Response) else self.entry(answer)
        response.delay = response.delay or (self.latency if service != "robots" else 0.0)
        return response

    @staticmethod
    def service(path: str) -> str:
        """Which stand-in a path is addressed to."""
        if path.startswith("/openalex/works/"):
            return "openalex_doi"
        for prefix, name in (("/openalex/", "openalex"), ("/s2/", "s2"), ("/crossref/", "crossref"),
                             ("/publisher/", "pdf")):
            if path.startswith(prefix):
                return name
        return "robots" if path == "/robots.txt" else "other"

    def entry(self, name: str) -> Response:
        """A recorded answer, the publisher's addresses pointing at this server."""
        if name == "openalex_work":  # a single Work: the first of the works-list answer (the same object)
            entry = recorded("openalex_works_search")
            entry["body"] = entry["body"]["results"][0]
        else:
            entry = recorded(name)
        body = json.loads(json.dumps(entry["body"]).replace("https://www.nature.com", self.url + "/publisher"))
        return Response(entry["status"], body, headers=dict(entry.get("headers") or {}))

    def asked(self, service: str) -> list[dict[str, str]]:
        """The query parameters of each request a service received, in order."""
        return [{k: v[0] for k, v in parse_qs(urlsplit(r.path).query, keep_blank_values=True).items()}
                for _, s, r in self.requests if s == service]


def serve(world: Scholarly) -> LoopbackServer:
    """A loopback server for the world (use as a context manager); its URL is set on the world."""
    server = LoopbackServer(world)
    world.url = server.url
    return server


def settings_for(world: Scholarly, **extra: Any) -> Settings:
    """Settings pointing the three services at the world (loopback allowed, no host gap)."""
    return Settings(openalex_base_url=world.url + "/openalex", semantic_scholar_base_url=world.url + "/s2",
                    crossref_base_url=world.url + "/crossref", scrape_allow_private=True, host_gap=0, **extra)


def env_for(world: Scholarly) -> dict[str, str]:
    """The same as environment variables, for main.py."""
    return {"OPENALEX_BASE_URL": world.url + "/openalex", "SEMANTIC_SCHOLAR_BASE_URL": world.url + "/s2",
            "CROSSREF_BASE_URL": world.url + "/crossref", "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0"}
