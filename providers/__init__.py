"""Model providers: one adapter per API behind the Backend protocol, and what every model call is held to.

Owns the adapters (OpenAI-compatible, Anthropic, Gemini, Ollama) and their registry, reading provider
error bodies, prices and context windows, the spend caps (budget), the per-run circuit breaker and the
reachability check. A provider is credentials and a base URL; the SDKs are imported when a backend is
built. May import core and config; never llm.py, the cache, tools or anything above them.
"""
