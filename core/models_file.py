"""The models file: named models (aliases) with their provider, model, endpoint, key variable and prices.

A TOML file (AGENT_MODELS_FILE, else models.toml in the working directory when present), one table per alias,
read with tomllib; an alias is accepted wherever a model is. The idea is simonw/llm's extra-openai-models.yaml:

    [writer]
    provider = "openai"                 # any provider:model prefix; default openai (an OpenAI-compatible API)
    model = "qwen2.5-72b-instruct"
    base_url = "http://gpu-box:8000/v1"
    api_key_env = "GPU_BOX_KEY"         # the variable holding its key (never the key itself)
    input_price = 0.20                  # USD per million tokens (optional)
    output_price = 0.60
    context_window = 32768              # optional
    headers = { "X-Team" = "research" } # optional extra HTTP headers

Every mistake is one ConfigError naming the file and the alias.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.chat import PROVIDERS
from core.errors import ConfigError
from core.settings_read import SettingsFile, read_once
from core.trust import LeftOut, TrustStore, Verdict

DEFAULT_FILE = "models.toml"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELDS = ("provider", "model", "base_url", "api_key_env", "input_price", "output_price", "context_window",
           "headers")


@dataclass(frozen=True)
class ModelAlias:
    """One table of the models file."""

    name: str
    provider: str
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    input_price: float | None = None  # USD per million tokens
    output_price: float | None = None
    context_window: int | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def spec(self) -> str:
        """The provider:model it stands for."""
        return f"{self.provider}:{self.model}"

    @property
    def routing(self) -> tuple[str, ...]:
        """Its fields that send requests, and a key, to a server of the file's choosing (core/trust.py)."""
        return tuple(name for name in ("base_url", "api_key_env", "headers") if getattr(self, name))

    @property
    def prices(self) -> tuple[float, float] | None:
        """(input, output) USD per million tokens, when the file gives both."""
        if self.input_price is None or self.output_price is None:
            return None
        return self.input_price, self.output_price


def models_file_path(explicit: str | None, cwd: Path | None = None) -> Path | None:
    """AGENT_MODELS_FILE's path, else models.toml in the working directory when it exists, else None."""
    if explicit:
        return Path(explicit)
    here = (cwd or Path.cwd()) / DEFAULT_FILE
    return here if here.is_file() else None


def parse_models(path: Path, data: bytes) -> tuple[ModelAlias, ...]:
    """The aliases of a models file's bytes; ConfigError (one line, naming the file and the alias) for any mistake."""
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"models file {path}: not valid TOML ({str(exc).splitlines()[0]})", "models_file") from exc
    return tuple(_alias(path, name, table) for name, table in parsed.items())


def read_models_file(path: Path) -> tuple[ModelAlias, ...]:
    """The aliases of a models file, read once; ConfigError when it cannot be read."""
    return parse_models(path, _read(path, ()).data)


def _read(path: Path, own: tuple[Path, ...]) -> SettingsFile:
    file = read_once(path, own)
    if file is None:
        raise ConfigError(f"models file {path}: cannot read it (no such file)", "models_file")
    return file


def models_layer(path: Path, own: tuple[Path, ...], by_user: bool) -> tuple[tuple[ModelAlias, ...], list[LeftOut]]:
    """A models file's aliases as they apply, read once: all of a trusted one's (named by the user, in one of
    `own` folders, or trusted as it is, core/trust.py); of an untrusted or changed one, those that send no key to
    a server of the file's choosing, with what was left out."""
    file = _read(path, own)
    aliases = parse_models(path, file.data)
    verdict = Verdict("trusted") if by_user else TrustStore().judge(file)
    if verdict.state == "trusted":
        return aliases, []
    routed = tuple(f"alias {a.name} ({', '.join(a.routing)})" for a in aliases if a.routing)
    return tuple(a for a in aliases if not a.routing), [LeftOut(path, routed, verdict.state)]


# The variables of the other providers' keys, tokens, base URLs and endpoints (providers/hosts.py has the names).
_PROVIDER_KEY = re.compile(r"^[A-Z][A-Z0-9_]*_(API_KEY|AD_TOKEN)$")
_PROVIDER_URL = re.compile(r"^(?!OTEL_)[A-Z][A-Z0-9_]*_(BASE_URL|ENDPOINT)$|^OPENAI_API_VERSION$")


def provider_settings(named: Path | None, layered: Mapping[str, str], own: tuple[Path, ...], by_user: bool,
                      left: list[LeftOut]) -> dict[str, Any]:
    """Settings' models file, its aliases, the provider variables (the keys its aliases name among them) and what
    was left out (`left` gains the untrusted models file's aliases that would send a key to a server of its
    choosing). `named`: AGENT_MODELS_FILE, else ./models.toml when present."""
    path = named or models_file_path(None)
    aliases, out = models_layer(path, own, by_user) if path else ((), [])
    left += out
    keys_named = {a.api_key_env for a in aliases if a.api_key_env}
    keys = tuple(sorted((k, v) for k, v in layered.items() if _PROVIDER_KEY.match(k) or k in keys_named))
    urls = tuple(sorted((k, v) for k, v in layered.items() if _PROVIDER_URL.match(k)))
    return {"models_file": path, "model_aliases": aliases, "provider_keys": keys, "provider_urls": urls,
            "left_out": tuple((name, str(item.file)) for item in left for name in item.names)}


def _alias(path: Path, name: str, table: Any) -> ModelAlias:
    def bad(what: str) -> ConfigError:
        return ConfigError(f"models file {path}, alias {name!r}: {what}", "models_file")

    if not isinstance(table, dict):
        raise bad("must be a table ([name] with provider, model, base_url, api_key_env ...)")
    if not _NAME.match(name):
        raise bad("an alias name holds only letters, digits, '.', '_' and '-' (no ':', which starts provider:model)")
    unknown = sorted(set(table) - set(_FIELDS))
    if unknown:
        raise bad(f"unknown field {unknown[0]!r} (known: {', '.join(_FIELDS)})")
    provider = _text(table, "provider", bad) or "openai"
    if provider not in PROVIDERS:
        raise bad(f"unknown provider {provider!r} (use one of {', '.join(PROVIDERS)})")
    model = _text(table, "model", bad)
    if not model:
        raise bad("needs model = \"...\" (the model name, or the Azure deployment, the server knows)")
    key_env, base_url, headers = _endpoint(table, bad)
    prices = _number(table, "input_price", bad), _number(table, "output_price", bad)
    if (prices[0] is None) != (prices[1] is None):
        raise bad("give both input_price and output_price (USD per million tokens), or neither")
    return ModelAlias(name, provider, model, base_url, key_env, prices[0], prices[1], _window(table, bad),
                      tuple((str(k), v) for k, v in headers.items()))


def _endpoint(table: dict[str, Any], bad: Any) -> tuple[str | None, str | None, dict[str, str]]:
    """The alias's key variable, base URL and extra headers, checked."""
    key_env = _text(table, "api_key_env", bad)
    if key_env is not None and not _VARIABLE.match(key_env):
        raise bad(f"api_key_env names an environment variable (such as MY_KEY), not {key_env[:3]}…")
    base_url = _text(table, "base_url", bad)
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise bad("base_url must start with http:// or https://")
    headers = table.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise bad("headers must be a table of strings: headers = { \"X-Name\" = \"value\" }")
    return key_env, base_url, headers


def _text(table: dict[str, Any], field: str, bad: Any) -> str | None:
    value = table.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise bad(f"{field} must be a non-empty string")
    return value.strip()


def _number(table: dict[str, Any], field: str, bad: Any) -> float | None:
    value = table.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise bad(f"{field} must be a number of USD per million tokens, 0 or more")
    return float(value)


def _window(table: dict[str, Any], bad: Any) -> int | None:
    value = table.get("context_window")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 256:
        raise bad("context_window must be a whole number of tokens (256 or more)")
    return value
