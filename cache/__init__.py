"""The --cache / --replay store: model completions, network tool results and probes in one SQLite file.

Owns the store (store.py), CachedModel, a wrapper that answers any ChatModel's calls from the store
first (model.py; llm.py knows nothing of the cache), recorded context-window probes (probes.py),
--replay-trace (trace_replay.py) and `main.py cache` (cli.py). May import core, config, providers
and llm.py; tools that go through the cache (tools/cached.py) import it, not the other way round.
"""
