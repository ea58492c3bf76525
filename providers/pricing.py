"""Prices (USD per million tokens) and context windows of common models; unknown models cost None."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

from config import Settings
from core.chat import split_spec
from core.errors import ConfigError

# model name -> (USD per 1M input tokens, USD per 1M output tokens, context window in tokens or None).
# Standard-tier list prices (no batch, cache or long-prompt rates) as published by the providers in
# autumn 2026; a prices file (settings.prices_file) overrides or extends them.
PRICES: dict[str, tuple[float, float, int | None]] = {
    # OpenAI
    "gpt-5.5": (5.00, 30.00, None),
    "gpt-5.4": (2.50, 15.00, 400_000),
    "gpt-5.4-mini": (0.75, 4.50, 400_000),
    "gpt-5.4-nano": (0.20, 1.25, 400_000),
    "gpt-5": (1.25, 10.00, 400_000),
    "gpt-5-mini": (0.25, 2.00, 400_000),
    "gpt-5-nano": (0.05, 0.40, 400_000),
    "gpt-4.1": (2.00, 8.00, 1_047_576),
    "gpt-4.1-mini": (0.40, 1.60, 1_047_576),
    "gpt-4.1-nano": (0.10, 0.40, 1_047_576),
    "gpt-4o": (2.50, 10.00, 128_000),
    "gpt-4o-mini": (0.15, 0.60, 128_000),
    "o3": (2.00, 8.00, 200_000),
    "o4-mini": (1.10, 4.40, 200_000),
    # OpenAI embeddings (AGENT_EMBEDDINGS_MODEL: input tokens only)
    "text-embedding-3-small": (0.02, 0.0, None),
    "text-embedding-3-large": (0.13, 0.0, None),
    "text-embedding-ada-002": (0.10, 0.0, None),
    # Anthropic
    "claude-fable-5-1": (10.00, 50.00, 1_000_000),
    "claude-opus-5-5": (4.00, 20.00, 1_000_000),
    "claude-sonnet-5-5": (2.00, 10.00, 1_000_000),
    "claude-opus-5": (5.00, 25.00, 1_000_000),
    "claude-sonnet-5": (2.00, 10.00, 1_000_000),
    "claude-sonnet-4-6": (3.00, 15.00, 1_000_000),
    "claude-haiku-4-5": (1.00, 5.00, 200_000),
    "claude-sonnet-4-5": (3.00, 15.00, 200_000),
    "claude-opus-4-5": (5.00, 25.00, 200_000),
    "claude-opus-4-1": (15.00, 75.00, 200_000),
    "claude-sonnet-4": (3.00, 15.00, 200_000),
    # Google (Pro models: the price for prompts up to 200k tokens)
    "gemini-3.8-flash": (0.75, 3.75, 1_048_576),
    "gemini-3.5-flash": (1.50, 9.00, 1_048_576),
    "gemini-3.5-flash-lite": (0.30, 2.50, 1_048_576),
    "gemini-3.1-pro-preview": (2.00, 12.00, 1_048_576),
    "gemini-2.5-pro": (1.25, 10.00, 1_048_576),
    "gemini-2.5-flash": (0.30, 2.50, 1_048_576),
    "gemini-2.5-flash-lite": (0.10, 0.40, 1_048_576),
    # Hosted OpenAI-compatible APIs (providers/hosts.py), their main models by the name each API takes.
    # Groq (console.groq.com/docs/models)
    "llama-3.3-70b-versatile": (0.59, 0.79, 131_072),
    "llama-3.1-8b-instant": (0.05, 0.08, 131_072),
    "openai/gpt-oss-120b": (0.15, 0.60, 131_072),  # Groq and Together alike
    # DeepSeek (api-docs.deepseek.com, cache-miss input price; V3.2 since Dec 2025)
    "deepseek-chat": (0.28, 0.42, 128_000),
    "deepseek-reasoner": (0.28, 0.42, 128_000),
    # Mistral (mistral.ai/pricing)
    "mistral-large-latest": (0.50, 1.50, 256_000),
    "mistral-medium-latest": (0.40, 2.00, 128_000),
    "mistral-small-latest": (0.10, 0.30, 128_000),
    # Together (together.ai/pricing)
    "meta-llama/llama-3.3-70b-instruct-turbo": (0.88, 0.88, 131_072),
    "deepseek-ai/deepseek-v3": (1.25, 1.25, 131_072),
    # Fireworks (fireworks.ai/pricing)
    "accounts/fireworks/models/llama-v3p3-70b-instruct": (0.90, 0.90, 131_072),
    "accounts/fireworks/models/deepseek-v3": (0.90, 0.90, 131_072),
    "accounts/fireworks/models/gpt-oss-120b": (0.15, 0.60, 131_072),
    # xAI (docs.x.ai/docs/models)
    "grok-4": (3.00, 15.00, 256_000),
    "grok-4-1-fast-reasoning": (0.20, 0.50, 2_000_000),
    "grok-4-1-fast-non-reasoning": (0.20, 0.50, 2_000_000),
    "grok-3-mini": (0.30, 0.50, 131_072),
}

# Announced price changes: model -> (first day of the new price, input, output).
PRICE_CHANGES: dict[str, tuple[date, float, float]] = {
    "gemini-3.8-flash": (date(2027, 1, 1), 1.50, 7.50),  # the launch price ends on 2026-12-31
}

# Prompt-cache rates as multiples of the input price, by model-name prefix (first match wins):
# (cache read, cache write). Anthropic: reads 0.1x, 5-minute writes 1.25x. OpenAI and Gemini cache
# automatically and charge no write; reads are 0.1x on GPT-5 and Gemini 2.5+, 0.25x on GPT-4.1/o3/o4-mini,
# 0.5x on GPT-4o (the providers' published pricing pages, autumn 2026).
CACHE_RATES: tuple[tuple[str, float, float], ...] = (
    ("claude", 0.10, 1.25),
    ("gpt-5", 0.10, 1.0),
    ("gpt-4.1", 0.25, 1.0),
    ("gpt-4o", 0.50, 1.0),
    ("o3", 0.25, 1.0),
    ("o4", 0.25, 1.0),
    ("gemini", 0.10, 1.0),
)

# Dated snapshots and "-latest" aliases have the price of their base model; nothing else is stripped,
# so "gpt-4o-audio-preview" stays unknown instead of being billed as "gpt-4o".
_SNAPSHOT = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest)$")

PriceTable = dict[str, tuple[float, float, int | None]]


def model_name(model_spec: str) -> str:
    """The bare, lower-case model name of a spec: "openai:gpt-4o" -> "gpt-4o"."""
    return split_spec(model_spec)[1].lower().removeprefix("models/")


def builtin_prices(today: date | None = None) -> PriceTable:
    """The built-in table with the price changes that have taken effect by today."""
    day = today or date.today()
    table = dict(PRICES)
    for name, (since, input_per_m, output_per_m) in PRICE_CHANGES.items():
        if day >= since and name in table:
            table[name] = (input_per_m, output_per_m, table[name][2])
    return table


def load_prices(prices_file: Path | None, today: date | None = None) -> PriceTable:
    """The built-in table, updated from a JSON file {"model": [input_per_m, output_per_m(, context)]}."""
    table = builtin_prices(today)
    if prices_file is None:
        return table
    try:
        data = json.loads(Path(prices_file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read prices file {prices_file}: {exc}", "prices_file") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"prices file {prices_file} must hold a JSON object", "prices_file")
    for name, entry in data.items():
        table[model_name(str(name))] = _parse_entry(prices_file, name, entry)
    return table


def settings_prices(settings: Settings, today: date | None = None) -> PriceTable:
    """The run's table: load_prices, plus each alias of the models file under its name, at the prices the file
    gives, else at its model's (never an Azure deployment's: its name says nothing of its model)."""
    table = load_prices(settings.prices_file, today)
    for alias in settings.model_aliases:
        known = None if alias.provider == "azure" else lookup(alias.spec, table)
        prices = alias.prices or (known[:2] if known else None)
        if prices is not None:
            table[alias.name.lower()] = (prices[0], prices[1], alias.context_window or (known[2] if known else None))
    return table


def priced_by_name_only(spec: str, settings: Settings) -> bool:
    """True when only the spec's own name may price it, never the model a reply names: an alias (priced as the
    models file says) or an Azure deployment (which may answer as "gpt-4o-2024-08-06" at another price)."""
    return split_spec(spec)[0] == "azure" or settings.alias(spec) is not None


def _parse_entry(prices_file: Path, name: str, entry: object) -> tuple[float, float, int | None]:
    if not isinstance(entry, list) or len(entry) not in (2, 3) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in entry):
        raise ConfigError(
            f"prices file {prices_file}: {name!r} must be [input_usd_per_million, output_usd_per_million]"
            " with an optional context window as third number", "prices_file")
    context = int(entry[2]) if len(entry) == 3 else PRICES.get(model_name(name), (0, 0, None))[2]
    return float(entry[0]), float(entry[1]), context


def lookup(model: str, table: PriceTable | None = None) -> tuple[float, float, int | None] | None:
    """The table entry for a model name or spec, allowing dated snapshot suffixes; None if unknown."""
    table = builtin_prices() if table is None else table
    if split_spec(model)[0] == "azure":  # a deployment's name says nothing of its model (an alias may price it)
        return None
    name = model_name(model)
    if name in table:
        return table[name]
    base = _SNAPSHOT.sub("", name)
    return table.get(base)


def priced(model: str, prices_file: Path | None = None) -> bool:
    """True when the model's price is known (the built-in table or --prices-file): else its costs show n/a."""
    return lookup(model, load_prices(prices_file) if prices_file else None) is not None


def cache_multipliers(model: str) -> tuple[float, float]:
    """(cache read, cache write) price as multiples of the input price; (1, 1) when unknown."""
    name = model_name(model)
    return next(((read, write) for prefix, read, write in CACHE_RATES if name.startswith(prefix)), (1.0, 1.0))


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int, table: PriceTable | None = None, *,
             cached_tokens: int = 0, cache_write_tokens: int = 0) -> float | None:
    """The USD cost of one call, or None when the model's price is unknown.

    prompt_tokens is the whole prompt; cached_tokens and cache_write_tokens are the parts of it read from
    and written to the provider's prompt cache, billed at the cache rates.
    """
    entry = lookup(model, table)
    if entry is None:
        return None
    read, write = cache_multipliers(model)
    cached = min(max(cached_tokens, 0), prompt_tokens)
    written = min(max(cache_write_tokens, 0), prompt_tokens - cached)
    plain = prompt_tokens - cached - written
    prompt_cost = (plain + cached * read + written * write) * entry[0]
    return (prompt_cost + completion_tokens * entry[1]) / 1_000_000


def context_window(model_spec: str, prices_file: Path | None = None, settings: Settings | None = None) -> int | None:
    """The model's context window in tokens, or None when it is not in the table; with settings, a models-file
    alias's own window first, then the run's table (its aliases included)."""
    if settings is not None:
        alias = settings.alias(model_spec)
        if alias is not None and alias.context_window:
            return alias.context_window
        entry = lookup(model_spec, settings_prices(settings))
    else:
        entry = lookup(model_spec, load_prices(prices_file) if prices_file else None)
    return entry[2] if entry else None
