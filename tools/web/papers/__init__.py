"""The scholarly tools: search_papers and its services, and arxiv.

Owns search_papers (tool.py: searching, reading a paper's open-access PDF, the notes on failures and retractions;
shown.py: a hit and a source's title as the model and the reports see them), the paper record and DOIs (paper.py),
the API requests and a service's holds after a 429/503 (client.py), one module per service (openalex.py,
semantic_scholar.py, crossref.py, with Crossref's retractions), and the arxiv tool (arxiv.py). The services are
asked in order, OpenAlex, Semantic Scholar, Crossref: the next one when one fails, finds nothing or is on hold.
May import core, config, sources, providers (the default pause), tools' base modules, tools/documents (a PDF's text,
in a child) and the rest of tools/web (the fetcher, the run's session, api_get, politeness); nothing in tools/web
outside this package imports it.
"""
