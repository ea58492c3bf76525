"""The tools that reach the web: search engines, the safe fetcher, scrape, and the run's headless browser.

Owns search and its engines (search.py, search_backends.py: Serper, Brave, Tavily, SearXNG, DuckDuckGo, in the
user's order), the wikipedia tool and API requests (wikipedia.py, api_get.py), the scholarly tools in papers/
(search_papers and its services OpenAlex, Semantic Scholar, Crossref; arxiv), the HTTP(S) fetcher with its address
policy, domain rules, redirect checks and one deadline per fetch (fetch.py, policy.py, addresses.py, domains.py,
fetch_deadline.py), robots.txt and per-host politeness (robots.py, politeness.py), blocked-page and
script-built-page detection (blocked.py, script_built.py), the headless browser and the browser tool that operates
pages in it (the browser/ package, whose docstring says what it holds), the run's shared web state (session.py), the
scrape tool and its errors (errors.py, at the bottom: every module here may import it). Turning a fetched body into
text is tools/documents' job. May import core, config, providers, the cache, the tools base modules (processes too)
and tools/documents; nothing in tools/documents or tools/media imports it except through the fetcher (look and
transcribe fetch URLs with scrape's rules, through the run's session).
"""
