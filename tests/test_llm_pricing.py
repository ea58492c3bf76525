"""Model prices and context windows: known models get a cost, unknown ones None, never a wrong number."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from core.errors import ConfigError
from providers.pricing import builtin_prices, context_window, cost_usd, load_prices, lookup


def test_a_known_model_is_priced_per_million_tokens() -> None:
    assert cost_usd("openai:gpt-4o", 1_000_000, 1_000_000) == pytest.approx(12.50)
    assert cost_usd("anthropic:claude-sonnet-5-5", 2_000, 500) == pytest.approx((2_000 * 2 + 500 * 10) / 1e6)


@pytest.mark.parametrize("model, base", [
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("openai:gpt-5.4-mini-2026-03-17", "gpt-5.4-mini"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("models/gemini-2.5-pro", "gemini-2.5-pro"),
    ("GPT-4O-MINI", "gpt-4o-mini"),
])
def test_dated_snapshots_and_spellings_find_their_base_model(model: str, base: str) -> None:
    assert lookup(model) == builtin_prices()[base]


@pytest.mark.parametrize("model", ["gpt-4o-audio-preview", "llama3.1:8b", "ollama:llama3.1", "gpt-4o-mini-2"])
def test_unknown_models_cost_none(model: str) -> None:
    assert cost_usd(model, 1000, 1000) is None


def test_gpt_4o_mini_is_not_billed_as_gpt_4o() -> None:
    assert cost_usd("gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)


def test_an_announced_price_change_applies_from_its_date() -> None:
    assert builtin_prices(date(2026, 12, 31))["gemini-3.8-flash"][:2] == (0.75, 3.75)
    assert builtin_prices(date(2027, 1, 1))["gemini-3.8-flash"][:2] == (1.50, 7.50)


def test_a_prices_file_overrides_and_extends_the_table(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text('{"gpt-4o": [1, 2], "ollama:qwen3:8b": [0, 0, 32768]}')
    table = load_prices(path)
    assert cost_usd("gpt-4o", 1_000_000, 1_000_000, table) == pytest.approx(3.0)
    assert cost_usd("ollama:qwen3:8b", 5000, 5000, table) == 0.0
    assert table["gpt-4o"][2] == 128_000  # the built-in context window survives a price override
    assert context_window("ollama:qwen3:8b", prices_file=path) == 32_768


@pytest.mark.parametrize("content, problem", [
    ("not json", "cannot read prices file"),
    ("[1, 2]", "must hold a JSON object"),
    ('{"m": [1]}', "input_usd_per_million"),
    ('{"m": ["1", 2]}', "input_usd_per_million"),
    ('{"m": [-1, 2]}', "input_usd_per_million"),
])
def test_a_malformed_prices_file_is_a_config_error(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=problem):
        load_prices(path)


def test_a_missing_prices_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read prices file"):
        load_prices(tmp_path / "absent.json")
