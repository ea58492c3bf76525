"""Which adapter serves each provider name, and building one from the settings (its key and base URL), or from
an alias of the models file (core/models_file.py: its provider, model, base URL, key variable and headers)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from config import Settings
from core.chat import PROVIDERS, split_spec
from core.errors import ConfigError
from core.models_file import ModelAlias
from providers.anthropic import AnthropicBackend
from providers.common import Backend
from providers.context_window import is_local, known_server_window
from providers.gemini import GeminiBackend
from providers.hosts import HOSTS, azure_backend, endpoint, host_backend, key_variable, missing
from providers.inspect_model import PROVIDER as INSPECT
from providers.inspect_model import inspect_backend
from providers.ollama import OllamaBackend
from providers.openai_compat import OpenAIBackend

KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
# Local servers ignore the key, but the SDK insists on one.
LOCAL_API_KEY = "not-needed"


def make_backend(provider: str, model: str, settings: Settings, alias: ModelAlias | None = None) -> Backend:
    """The adapter for one provider:model (or an alias of the models file, named by its alias); ConfigError when
    its key or SDK is missing."""
    spec = alias.name if alias else f"{provider}:{model}"
    if provider == INSPECT:  # the model of the Inspect eval this sample runs in
        return inspect_backend(spec, model)
    if provider == "azure":
        return azure_backend(model, settings, spec, alias)
    if provider in HOSTS:
        return host_backend(provider, model, settings, spec, alias)
    if alias is None:
        return _native(provider, model, settings, spec)
    # openai, anthropic, gemini or ollama: that adapter with the alias's base URL and key
    key = settings.provider_env(alias.api_key_env) if alias.api_key_env else None
    if alias.api_key_env and not key:
        raise missing(alias.name, [alias.api_key_env])
    own: dict[str, Any] = {f"{provider}_base_url": alias.base_url} if alias.base_url else {}
    if provider != "ollama" and (key or alias.base_url):  # another server never gets the provider's own key
        own[f"{provider}_api_key"] = key
    return _native(provider, model, replace(settings, **own), spec, alias.api_key_env, dict(alias.headers))


def _native(provider: str, model: str, settings: Settings, spec: str, key_env: str | None = None,
            headers: dict[str, str] | None = None) -> Backend:
    if provider == "ollama":
        # The native API: Ollama's OpenAI-compatible one cannot set the context size (see context_window.py).
        return OllamaBackend(spec, model, base_url=settings.ollama_base_url, timeout=settings.request_timeout,
                             budget=settings.context_budget, max_tokens=settings.max_tokens)
    key = settings.api_key_for(provider)
    if provider == "openai":
        if not key and not settings.openai_base_url:
            raise _missing_key(spec, provider)
        base = settings.openai_base_url
        return OpenAIBackend(spec, model, api_key=key or LOCAL_API_KEY, base_url=base,
                             timeout=settings.request_timeout, key_env=(key_env or "OPENAI_API_KEY") if key else None,
                             # the window the prompt budget was fitted to (vLLM, llama.cpp): the fit warning
                             window=(lambda: settings.context_window or known_server_window(base, model))
                             if base else None,
                             local=is_local(provider, model, settings), headers=headers or None)
    if not key:
        raise _missing_key(spec, provider)
    if provider == "anthropic":
        return AnthropicBackend(spec, model, api_key=key, base_url=settings.anthropic_base_url,
                                timeout=settings.request_timeout)
    if provider == "gemini":
        return GeminiBackend(spec, model, api_key=key, base_url=settings.gemini_base_url,
                             timeout=settings.request_timeout)
    raise ConfigError(f"unknown provider {provider!r}; use one of: {', '.join(PROVIDERS)}", "model")


@dataclass(frozen=True)
class Endpoint:
    """Where a model's requests go, as check_setup.py shows it: never the key, only the variable holding it."""

    provider: str
    url: str
    key_env: str | None

    def describe(self) -> str:
        """"openai at api.openai.com, key OPENAI_API_KEY"."""
        host = urlsplit(self.url).netloc or self.url
        return f"{self.provider} at {host}, " + (f"key {self.key_env}" if self.key_env else "no key")


_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com",
                 "gemini": "https://generativelanguage.googleapis.com"}


def endpoint_of(spec: str, settings: Settings) -> Endpoint | None:
    """The provider, URL and key variable of a model string or alias (None: no known provider)."""
    alias = settings.alias(spec)
    provider = alias.provider if alias else split_spec(spec)[0]
    if not provider:
        return None
    if provider == "azure" or provider in HOSTS:
        return Endpoint(provider, endpoint(provider, settings, alias), key_variable(provider, settings, alias))
    own = alias.base_url if alias else None
    url = own or getattr(settings, f"{provider}_base_url", None) or _DEFAULT_URLS.get(provider, "")
    key = alias.api_key_env if alias and (alias.api_key_env or own) else KEY_ENV.get(provider)
    if provider == "openai" and not (alias and alias.api_key_env) and not settings.openai_api_key and url != \
            _DEFAULT_URLS["openai"]:
        key = None  # a local server: no key is sent
    return Endpoint(provider, url, key)


def _missing_key(spec: str, provider: str) -> ConfigError:
    extra = " (or GOOGLE_API_KEY)" if provider == "gemini" else ""
    local = ""
    if provider == "openai":
        local = " For a local OpenAI-compatible server set OPENAI_BASE_URL instead."
    return ConfigError(f"model {spec} needs {KEY_ENV[provider]}{extra}: set it in the environment or"
                       f" a .env file.{local}", "model")
