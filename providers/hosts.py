"""Azure OpenAI, OpenRouter and the hosted OpenAI-compatible APIs: each is credentials and a base URL (Azure: the
SDK's Azure client) on the one OpenAI adapter (openai_compat.OpenAIBackend), never a copy of it.

A host's base URL is overridden by NAME_BASE_URL (GROQ_BASE_URL ...); its key is NAME_API_KEY. Azure reads the
openai SDK's own variables: AZURE_OPENAI_API_KEY or AZURE_OPENAI_AD_TOKEN (Entra ID), AZURE_OPENAI_ENDPOINT and
OPENAI_API_VERSION. With an API version, `azure:DEPLOYMENT` goes to {endpoint}/openai/deployments/DEPLOYMENT/
chat/completions?api-version=... through openai.AzureOpenAI; without one (or with "v1"), to Azure's v1 API at
{endpoint}/openai/v1/ through the plain client with the key in the `api-key` header.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from config import Settings
from core.chat import split_spec
from core.errors import ConfigError
from core.models_file import ModelAlias
from providers.common import sdk_missing
from providers.openai_compat import OpenAIBackend


@dataclass(frozen=True)
class Host:
    """A hosted OpenAI-compatible API: its name in messages, default base URL and key variable."""

    label: str
    base_url: str
    key_env: str


HOSTS: dict[str, Host] = {  # their billing pages: providers/errors.BILLING_PAGES, by label
    "openrouter": Host("OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": Host("Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": Host("DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": Host("Mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "together": Host("Together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks": Host("Fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "xai": Host("xAI", "https://api.x.ai/v1", "XAI_API_KEY"),
}
AZURE_KEY, AZURE_TOKEN = "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"
AZURE_ENDPOINT, AZURE_VERSION = "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"
AZURE = "Azure OpenAI"


def base_env(provider: str) -> str:
    """The variable that overrides a host's base URL: GROQ_BASE_URL, OPENROUTER_BASE_URL ..."""
    return f"{provider.upper()}_BASE_URL"


def endpoint(provider: str, settings: Settings, alias: ModelAlias | None = None) -> str:
    """Where a hosted provider's requests go: the alias's base URL, NAME_BASE_URL, else its default."""
    if provider == "azure":
        return (alias.base_url if alias and alias.base_url else settings.provider_env(AZURE_ENDPOINT)) or ""
    return (alias.base_url if alias and alias.base_url else None) or settings.provider_env(base_env(provider)) \
        or HOSTS[provider].base_url


def key_variable(provider: str, settings: Settings, alias: ModelAlias | None = None) -> str:
    """The variable that holds the key a hosted provider's requests carry (the alias's own when it names one)."""
    if alias and alias.api_key_env:
        return alias.api_key_env
    if provider == "azure":
        return AZURE_TOKEN if settings.provider_env(AZURE_TOKEN) else AZURE_KEY  # the SDK's order: the token wins
    return HOSTS[provider].key_env


def openai_endpoint(spec: str, settings: Settings) -> tuple[str, str, str, str | None] | None:
    """(provider, model, base URL, key) of a model served on an OpenAI-compatible endpoint of its own: a named
    host, or a models-file alias of one or with its own base_url (Azure: None, its client differs); None else."""
    alias = settings.alias(spec)
    provider, model = (alias.provider, alias.model) if alias else split_spec(spec)
    if provider in HOSTS:
        return provider, model, endpoint(provider, settings, alias), settings.provider_env(
            key_variable(provider, settings, alias))
    if alias is not None and provider == "openai" and alias.base_url:
        return provider, model, alias.base_url, settings.provider_env(alias.api_key_env) if alias.api_key_env else None
    return None


def host_backend(provider: str, model: str, settings: Settings, spec: str,
                 alias: ModelAlias | None = None) -> OpenAIBackend:
    """OpenRouter or a named host (groq, deepseek, mistral, together, fireworks, xai) on the OpenAI adapter."""
    host, variable = HOSTS[provider], key_variable(provider, settings, alias)
    key = settings.provider_env(variable)
    if not key:
        raise missing(spec, [variable])
    headers = dict(alias.headers) if alias else {}
    if provider == "openrouter":  # OpenRouter's optional attribution of the calls to an app
        headers.update({k: v for k, v in (("HTTP-Referer", settings.openrouter_site_url),
                                          ("X-Title", settings.openrouter_app_name)) if v})
    return OpenAIBackend(spec, model, api_key=key, base_url=endpoint(provider, settings, alias),
                         timeout=settings.request_timeout, key_env=variable, provider=host.label, hosted=True,
                         headers=headers or None, reports_cost=provider == "openrouter")


def azure_backend(deployment: str, settings: Settings, spec: str, alias: ModelAlias | None = None) -> OpenAIBackend:
    """`azure:DEPLOYMENT`: the deployment path with OPENAI_API_VERSION (the SDK's Azure client), else the v1 API."""
    variable = key_variable("azure", settings, alias)
    secret, base = settings.provider_env(variable), endpoint("azure", settings, alias)
    if not secret or not base:
        raise missing(spec, [n for n, v in ((f"{AZURE_KEY} (or {AZURE_TOKEN})", secret), (AZURE_ENDPOINT, base))
                             if not v])
    token = variable == AZURE_TOKEN
    version = settings.provider_env(AZURE_VERSION)
    headers = dict(alias.headers) if alias else {}
    hint = (f"Check the deployment name (azure:{deployment}) against the deployments of the resource at "
            f"{urlsplit(base).netloc or base} ({AZURE_ENDPOINT}).")
    if version and version != "v1":
        client = _azure_client(base, version, secret, token, settings.request_timeout, headers)
        url = f"{base.rstrip('/')}/openai"
    else:  # the v1 API: no api-version; the key in api-key (an Entra ID token as a bearer token)
        url = base.rstrip("/") if base.rstrip("/").endswith("/openai/v1") else f"{base.rstrip('/')}/openai/v1"
        client = None
        if not token:
            headers["api-key"] = secret
    return OpenAIBackend(spec, deployment, api_key=secret, base_url=url + ("/" if client is None else ""),
                         timeout=settings.request_timeout, key_env=variable, provider=AZURE, hosted=True,
                         client=client, headers=headers or None, pull_hint=hint, what="deployment")


def _azure_client(base: str, version: str, secret: str, token: bool, timeout: float, headers: dict[str, str]) -> Any:
    try:
        import openai
    except ImportError as exc:
        raise sdk_missing("openai", exc) from exc
    if token:
        return openai.AzureOpenAI(azure_endpoint=base, api_version=version, azure_ad_token=secret, timeout=timeout,
                                  max_retries=0, default_headers=headers or None)
    return openai.AzureOpenAI(azure_endpoint=base, api_version=version, api_key=secret, timeout=timeout,
                              max_retries=0, default_headers=headers or None)


def missing(spec: str, variables: list[str]) -> ConfigError:
    """The ConfigError of a hosted model whose key or endpoint is not set, naming the variables."""
    return ConfigError(f"model {spec} needs {' and '.join(variables)}: set it in the environment or a .env file.",
                       "model")
