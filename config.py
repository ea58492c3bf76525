"""One frozen settings object: defaults, then the .env files (core/envfile.py: the user's own, AGENT_ENV_FILE, then
the start folder's), then the environment, then CLI flags win."""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from core.envfile import file_layers
from core.errors import ConfigError
from core.models_file import ModelAlias, provider_settings
from core.search_settings import check_search
from core.trust import chosen, notice, own_folders, tell_once
from core.values import comma_list, entries, number, parse_bool, paths, whole

PROJECT_ROOT = Path(__file__).resolve().parent


# -- checks that turn bad values into one-line ConfigErrors (`maybe` is an error, not a silent False)

# field -> (smallest allowed value, whether the smallest itself is allowed)
_LIMITS: dict[str, tuple[float, bool]] = {
    "task_timeout": (0, False), "request_timeout": (0, False), "python_timeout": (0, False),
    "scrape_timeout": (0, False), "retry_deadline": (0, True), "max_retry_wait": (0, True),
    "temperature": (0, True), "max_retries": (0, True), "max_tokens": (1, True),
    "context_window": (256, True),
    "max_format_errors": (1, True), "scrape_max_bytes": (1, True), "python_memory_mb": (0, True),
    "host_gap": (0, True), "host_concurrency": (1, True), "browser_pages": (1, True),
    "max_steps": (1, True), "concurrency": (1, True), "keep_workspaces": (0, True), "context_budget": (1000, True),
    "max_cost": (0, False), "max_run_cost": (0, False), "max_tokens_per_task": (0, False), "rpm": (0, False),
    "tpm": (0, False),
    "browser_memory_mb": (64, True), "doc_memory_mb": (64, True), "doc_timeout": (0, False),
}
# field -> its flag in main.py, for the messages (each names the flag, its variable and the bad value)
_FLAGS = {"task_timeout": "--task-timeout", "max_steps": "--max-steps", "concurrency": "--concurrency",
          "context_budget": "--context-budget", "context_window": "--context-window", "host_gap": "--host-gap",
          "search_backends": "--search-backends",
          "max_cost": "--max-cost", "max_run_cost": "--max-run-cost", "max_tokens_per_task": "--max-tokens-per-task",
          "rpm": "--rpm", "tpm": "--tpm", "max_tokens": "--max-tokens", "keep_workspaces": "--keep-workspaces",
          "answer_style": "--answer-style", "sandbox": "--sandbox", "verify_claims": "--verify-claims",
          "executor": "--executor", "docs_dirs": "--docs", "papers": "--no-papers",
          "embeddings_model": "--embeddings"}


def setting_name(field: str) -> str:
    """How a user sets a field: its flag and/or environment variable(s)."""
    names = [_FLAGS[field]] if field in _FLAGS else []
    names += [var for name, variables, _ in _ENV if name == field for var in variables]
    return " / ".join(names) or field


def flag_variables() -> dict[str, str]:
    """Each flag that sets a setting -> its environment variable (a flag's usage error names both)."""
    return {flag: setting_name(field).split(" / ")[1] for field, flag in _FLAGS.items()}


def check_numbers(settings: Any) -> None:
    """ConfigError for a number that is NaN or infinite, or below what the setting allows."""
    for f in fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value):
            raise ConfigError(f"{setting_name(f.name)} must be a finite number, not {value}", f.name)
        low, inclusive = _LIMITS.get(f.name, (-math.inf, True))
        if value < low or (value == low and not inclusive):
            need = f"at least {low:g}" if inclusive else f"more than {low:g}"
            raise ConfigError(f"{setting_name(f.name)} must be {need}, not {value:g}", f.name)


# (field name, environment variable(s), parser). The first variable that is set wins.
_ENV: list[tuple[str, tuple[str, ...], Any]] = [
    ("model", ("AGENT_MODEL",), str),
    ("fallback_models", ("AGENT_FALLBACK_MODELS",), comma_list),
    ("summary_model", ("AGENT_SUMMARY_MODEL",), str),
    ("vision_model", ("AGENT_VISION_MODEL",), str),
    ("transcribe_model", ("AGENT_TRANSCRIBE_MODEL",), str),
    ("embeddings_model", ("AGENT_EMBEDDINGS_MODEL",), str),
    ("planner_model", ("AGENT_PLANNER_MODEL",), str),
    ("writer_model", ("AGENT_WRITER_MODEL",), str),
    ("models_file", ("AGENT_MODELS_FILE",), Path),
    ("openrouter_site_url", ("OPENROUTER_SITE_URL",), str),
    ("openrouter_app_name", ("OPENROUTER_APP_NAME",), str),
    ("tool_modules", ("AGENT_TOOL_MODULES",), comma_list),
    ("mcp_servers", ("AGENT_MCP_SERVERS",), entries),
    ("mcp_config", ("AGENT_MCP_CONFIG",), Path),
    ("mcp_token", ("AGENT_MCP_TOKEN",), str),
    ("openai_api_key", ("OPENAI_API_KEY",), str),
    ("openai_base_url", ("OPENAI_BASE_URL",), str),
    ("anthropic_api_key", ("ANTHROPIC_API_KEY",), str),
    ("anthropic_base_url", ("ANTHROPIC_BASE_URL",), str),
    ("gemini_api_key", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), str),
    ("gemini_base_url", ("GEMINI_BASE_URL",), str),
    ("ollama_base_url", ("OLLAMA_BASE_URL",), str),
    ("serper_api_key", ("SERPER_API_KEY",), str),
    ("serper_base_url", ("SERPER_BASE_URL",), str),
    ("search_backends", ("SEARCH_BACKENDS",), lambda v: tuple(x.lower() for x in comma_list(v))),
    ("searxng_url", ("SEARXNG_URL",), str),
    ("brave_api_key", ("BRAVE_API_KEY",), str),
    ("brave_base_url", ("BRAVE_BASE_URL",), str),
    ("tavily_api_key", ("TAVILY_API_KEY",), str),
    ("tavily_base_url", ("TAVILY_BASE_URL",), str),
    ("wikipedia_api_url", ("WIKIPEDIA_API_URL",), str),
    ("arxiv_api_url", ("ARXIV_API_URL",), str),
    ("papers", ("AGENT_PAPERS",), str),  # search_papers and its services (tools/web/papers/)
    ("openalex_mailto", ("OPENALEX_MAILTO",), str),
    ("openalex_api_key", ("OPENALEX_API_KEY",), str),
    ("openalex_base_url", ("OPENALEX_BASE_URL",), str),
    ("semantic_scholar_api_key", ("SEMANTIC_SCHOLAR_API_KEY",), str),
    ("semantic_scholar_base_url", ("SEMANTIC_SCHOLAR_BASE_URL",), str),
    ("crossref_mailto", ("CROSSREF_MAILTO",), str),
    ("crossref_base_url", ("CROSSREF_BASE_URL",), str),
    ("max_steps", ("AGENT_MAX_STEPS",), whole),
    ("max_format_errors", ("AGENT_MAX_FORMAT_ERRORS",), whole),
    ("task_timeout", ("AGENT_TASK_TIMEOUT",), number),
    ("tool_timeout", ("AGENT_TOOL_TIMEOUT",), number),
    ("context_budget", ("AGENT_CONTEXT_BUDGET",), whole),
    ("context_window", ("AGENT_CONTEXT_WINDOW",), whole),
    ("max_tokens", ("AGENT_MAX_TOKENS",), whole),
    ("temperature", ("AGENT_TEMPERATURE",), number),
    ("request_timeout", ("AGENT_REQUEST_TIMEOUT",), number),
    ("max_retries", ("AGENT_MAX_RETRIES",), whole),
    ("retry_deadline", ("AGENT_RETRY_DEADLINE",), number),
    ("max_retry_wait", ("AGENT_MAX_RETRY_WAIT",), number),
    ("prices_file", ("AGENT_PRICES_FILE",), Path),
    ("concurrency", ("AGENT_CONCURRENCY",), whole),
    ("workspace", ("AGENT_WORKSPACE",), Path),
    ("trace_dir", ("AGENT_TRACE_DIR",), Path),
    ("runs_dir", ("AGENT_RUNS_DIR",), Path),
    ("keep_workspaces", ("AGENT_KEEP_WORKSPACES",), whole),
    ("answer_style", ("AGENT_ANSWER_STYLE",), str),
    ("max_cost", ("AGENT_MAX_COST",), number),
    ("max_run_cost", ("AGENT_MAX_RUN_COST",), number),
    ("max_tokens_per_task", ("AGENT_MAX_TOKENS_PER_TASK",), whole),
    ("rpm", ("AGENT_RPM",), whole),
    ("tpm", ("AGENT_TPM",), whole),
    ("cache_dir", ("AGENT_CACHE_DIR",), Path),
    ("cache_replay", ("AGENT_CACHE_REPLAY",), parse_bool),
    ("python_timeout", ("PYTHON_TOOL_TIMEOUT",), number),
    ("python_memory_mb", ("PYTHON_TOOL_MEMORY_MB",), whole),
    ("doc_memory_mb", ("AGENT_DOC_MEMORY_MB",), whole),
    ("doc_timeout", ("AGENT_DOC_TIMEOUT",), number),
    ("sandbox", ("AGENT_SANDBOX",), str),
    ("python_network", ("AGENT_PYTHON_NETWORK",), parse_bool),
    ("workspace_budget_mb", ("AGENT_WORKSPACE_BUDGET_MB",), whole),
    ("scrape_allow_private", ("SCRAPE_ALLOW_PRIVATE_URLS",), parse_bool),
    ("scrape_max_bytes", ("SCRAPE_MAX_BYTES",), whole),
    ("scrape_timeout", ("SCRAPE_TIMEOUT",), number),
    ("search", ("AGENT_SEARCH",), parse_bool),
    ("docs_dirs", ("AGENT_DOCS",), paths),
    ("verify_claims", ("AGENT_VERIFY_CLAIMS",), str),
    ("judge_model", ("AGENT_JUDGE_MODEL",), str),
    ("user_agent", ("SCRAPE_USER_AGENT",), str),
    ("ignore_robots", ("SCRAPE_IGNORE_ROBOTS",), parse_bool),
    ("host_gap", ("SCRAPE_HOST_GAP",), number),
    ("host_concurrency", ("SCRAPE_HOST_CONCURRENCY",), whole),
    ("render", ("SCRAPE_RENDER",), str),
    ("browser_pages", ("SCRAPE_BROWSER_PAGES",), whole),
    ("browser_memory_mb", ("SCRAPE_BROWSER_MEMORY_MB",), whole),
    ("chromium", ("SCRAPE_CHROMIUM",), str),
    ("allow_domains", ("AGENT_ALLOW_DOMAINS",), comma_list),
    ("block_domains", ("AGENT_BLOCK_DOMAINS",), comma_list),
    # OpenTelemetry export (telemetry/): the standard OTEL_* names; the traces-only variable wins.
    ("otel_traces_endpoint", ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",), str),
    ("otel_endpoint", ("OTEL_EXPORTER_OTLP_ENDPOINT",), str),
    ("otel_protocol", ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"), str),
    ("otel_headers", ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"), str),
    ("otel_service_name", ("OTEL_SERVICE_NAME",), str),
    ("otel_disabled", ("OTEL_SDK_DISABLED",), parse_bool),
    ("executor", ("AGENT_EXECUTOR",), str),
    ("ray_address", ("RAY_ADDRESS",), str),
]


@dataclass(frozen=True)
class Settings:
    """Every setting of a run; built once by main.py or check_setup.py and passed down."""

    model: str | None = None
    fallback_models: tuple[str, ...] = ()
    summary_model: str | None = None
    vision_model: str | None = None  # look's model when the main model cannot see images
    transcribe_model: str | None = None  # transcribe's speech-to-text model (openai:whisper-1, gemini:...)
    embeddings_model: str | None = None  # --docs search by meaning too (openai:text-embedding-3-small, an alias)
    planner_model: str | None = None  # research: the model that plans the sub-questions (default: model)
    writer_model: str | None = None  # research: the model that writes and repairs the report (default: model)
    models_file: Path | None = None  # AGENT_MODELS_FILE, else ./models.toml when present (core/models_file.py)
    model_aliases: tuple[ModelAlias, ...] = ()  # its aliases, each accepted wherever a model is
    left_out: tuple[tuple[str, str], ...] = ()  # (variable or `alias NAME (...)`, file) not applied: untrusted
    # The other providers' variables (providers/hosts.py names them): keys and tokens (secrets, core/secrets.py),
    # then base URLs, endpoints and the Azure API version, as (VARIABLE, value) pairs.
    provider_keys: tuple[tuple[str, str], ...] = ()
    provider_urls: tuple[tuple[str, str], ...] = ()
    openrouter_site_url: str | None = None  # OpenRouter's attribution headers: HTTP-Referer ...
    openrouter_app_name: str | None = None  # ... and X-Title
    tool_modules: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()  # NAME=COMMAND or NAME=URL entries
    mcp_config: Path | None = None  # an mcp.json with {"mcpServers": {...}}
    mcp_token: str | None = None  # serve-mcp --http's bearer token (None: a random one, printed at start): a secret
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    gemini_api_key: str | None = None
    gemini_base_url: str | None = None
    ollama_base_url: str = "http://localhost:11434/v1"
    serper_api_key: str | None = None
    serper_base_url: str = "https://google.serper.dev"
    search_backends: tuple[str, ...] = ()  # the search tool's order; () = every configured one, then DuckDuckGo
    searxng_url: str | None = None  # a SearXNG instance with format=json enabled
    brave_api_key: str | None = None
    brave_base_url: str = "https://api.search.brave.com"
    tavily_api_key: str | None = None
    tavily_base_url: str = "https://api.tavily.com"
    wikipedia_api_url: str = "https://en.wikipedia.org/w/api.php"  # a MediaWiki action API (another language, a mirror)
    arxiv_api_url: str = "https://export.arxiv.org/api/query"  # the arXiv API's Atom query endpoint
    papers: str = "on"  # search_papers (tools/web/papers/tool.py): on, off (--no-papers), only (research --papers-only)
    openalex_mailto: str | None = None  # OpenAlex's polite pool: an address it may write to
    openalex_api_key: str | None = None  # OpenAlex's (free) key: its daily allowance without one is small
    openalex_base_url: str = "https://api.openalex.org"
    semantic_scholar_api_key: str | None = None
    semantic_scholar_base_url: str = "https://api.semanticscholar.org"
    crossref_mailto: str | None = None  # Crossref's polite pool
    crossref_base_url: str = "https://api.crossref.org"
    max_steps: int = 15
    max_format_errors: int = 3
    task_timeout: float = 900.0
    tool_timeout: float = 300.0  # one tool call; the task's own limit cuts it earlier
    context_budget: int | None = None
    context_window: int | None = None  # the model server's window, for servers that do not report it
    max_tokens: int = 8192
    temperature: float | None = None  # None: 0, except families whose makers advise their default
    request_timeout: float = 120.0
    max_retries: int = 6
    retry_deadline: float = 300.0
    max_retry_wait: float = 60.0
    prices_file: Path | None = None
    concurrency: int = 1
    workspace: Path | None = None  # None: the run's own workspace/ in the run store; else <workspace>/<run id>
    trace_dir: Path | None = None  # None: the run's own traces/ in the run store; else <trace_dir>/<run id>
    traces: bool = True  # --no-trace: write no trace files
    runs_dir: Path = Path("runs")  # the run store (run/store.py): one directory per run
    keep_workspaces: int = 20  # finished runs whose workspaces are kept; older runs' are removed
    answer_style: str = "plain"
    max_cost: float | None = None  # USD per task
    max_run_cost: float | None = None  # USD for the whole run
    max_tokens_per_task: int | None = None
    rpm: int | None = None  # requests per minute to each provider, shared by all tasks (providers/ratelimit.py)
    tpm: int | None = None  # tokens per minute to each provider, shared by all tasks
    cache_dir: Path | None = None  # --cache / --replay
    cache_replay: bool = False  # --replay: answer only from cache_dir, never call a model or the network
    python_timeout: float = 60.0
    python_memory_mb: int = 2048
    doc_memory_mb: int = 1024  # memory one document's conversion may use, in its own process (tools/documents/confined)
    doc_timeout: float = 60.0  # seconds one document's conversion may take (a file of --docs past it is skipped)
    sandbox: str = "auto"  # the python tool's OS sandbox: auto, landlock, bwrap, require, none
    python_network: bool = False  # network for model-written code (scrape still downloads)
    workspace_budget_mb: int = 1024  # disk a task's workspace may use; checked during and after python runs
    scrape_allow_private: bool = False
    scrape_max_bytes: int = 10_000_000
    scrape_timeout: float = 30.0
    search: bool = True  # off (AGENT_SEARCH=0, --no-search): no search tool, and check_setup does not probe it
    docs_dirs: tuple[Path, ...] = ()  # --docs: the user's document folders search_docs finds passages in
    verify_claims: str = "off"  # model: the model also judges each cited claim against its source's passage
    judge_model: str | None = None  # --judge-model: this model does, beside the model-free check (tasks, research)
    user_agent: str | None = None  # None: "Mozilla/5.0 (compatible; react-research-agent/VERSION; ...)"
    ignore_robots: bool = False  # --ignore-robots: fetch what robots.txt disallows
    host_gap: float = 1.0  # seconds between the starts of two requests to one host (all tasks together)
    host_concurrency: int = 2  # requests in flight to one host at once (all tasks together)
    render: str = "auto"  # auto: render script-built pages in headless Chromium; off: never
    browser_pages: int = 2  # pages the run's one browser renders at once
    browser_memory_mb: int = 1024  # memory one page of the browser may hold; above it, the page is closed
    chromium: str | None = None  # a Chromium executable (default: Playwright's own, else chromium on PATH)
    allow_domains: tuple[str, ...] = ()  # when set, only these domains (and their subdomains) may be reached
    block_domains: tuple[str, ...] = ()  # these domains (and their subdomains) may never be reached
    otel_traces_endpoint: str | None = None  # OTLP traces URL, used as is
    otel_endpoint: str | None = None  # OTLP base URL: /v1/traces is added for HTTP
    otel_protocol: str = "http/protobuf"  # or grpc (pip install opentelemetry-exporter-otlp-proto-grpc)
    otel_headers: str | None = None  # k=v,k2=v2 sent to the collector (an Authorization header): a secret
    otel_service_name: str | None = None  # the service.name of the spans (default react-research-agent)
    otel_disabled: bool = False  # OTEL_SDK_DISABLED=true: no export even with an endpoint
    executor: str = "threads"  # threads: tasks run here; ray: each task is a Ray task (run/ray_executor.py)
    ray_address: str | None = None  # the cluster to join (auto: the running one); None: start a local one
    origins: tuple[tuple[str, str], ...] = ()  # field -> where it was set: its flag, the environment, a .env

    def origin(self, name: str) -> str:
        """Where a setting came from: its flag (`--sandbox`), `the environment`, a .env's path, or `the default`."""
        return dict(self.origins).get(name, "the default")

    def with_overrides(self, **overrides: Any) -> Settings:
        """Return a copy with the given fields replaced; None values are ignored."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def api_key_for(self, provider: str) -> str | None:
        """The API key configured for a provider name, if any."""
        return {
            "openai": self.openai_api_key,
            "anthropic": self.anthropic_api_key,
            "gemini": self.gemini_api_key,
        }.get(provider)

    def alias(self, name: str) -> ModelAlias | None:
        """The models file's alias of this name, if any."""
        return next((a for a in self.model_aliases if a.name == name.strip()), None)

    def provider_env(self, variable: str) -> str | None:
        """A provider variable's value (a key, a base URL, the Azure endpoint or API version), if set."""
        return dict(self.provider_keys or ()).get(variable) or dict(self.provider_urls or ()).get(variable)


def project_version() -> str:
    """The version pyproject.toml gives (the one place that holds it)."""
    with (PROJECT_ROOT / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def load_settings(
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    env_file: Path | None = None,
) -> Settings:
    """Build Settings: defaults < .env files < environment < CLI flags (None flags are ignored). What a start
    folder's .env or models file may not set (untrusted, or loosening the user's own) is left out, with one line
    on stderr (core/trust.py); `env_file` (a caller's own) stands for the user's files and the folder's."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if v != ""}
    files = file_layers(PROJECT_ROOT, os.environ, env_file)
    layered = {**files.values, **env}
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, variables, parse in _ENV:
        var = next((v for v in variables if v in layered), None)
        if var is None:
            continue
        try:
            values[name] = parse(layered[var])
        except ValueError as exc:
            raise ConfigError(f"{var}={layered[var]!r} is not valid for {setting_name(name)}: {exc}", var) from exc
        origins[name] = "the environment" if var in env else files.origins[var]
    known = {f.name for f in fields(Settings)}
    for key, value in (cli or {}).items():
        if key not in known:
            raise ConfigError(f"unknown setting {key!r}", key)
        if value is not None and value != ():
            values[key], origins[key] = value, _FLAGS.get(key, "a flag")
    by_user = chosen("AGENT_MODELS_FILE", env) or ("AGENT_MODELS_FILE" in files.by_user and
                                                   chosen("AGENT_MODELS_FILE", files.values))
    values.update(provider_settings(values.get("models_file"), layered, own_folders(PROJECT_ROOT), by_user, files.left))
    tell_once(notice(files.left, PROJECT_ROOT / "main.py"))
    settings = Settings(**values, origins=tuple(sorted(origins.items())))
    _validate(settings)
    return settings


# Settings with a fixed set of values.
_CHOICES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("answer_style", ("plain", "concise")), ("sandbox", ("auto", "landlock", "bwrap", "require", "none")),
    ("otel_protocol", ("http/protobuf", "grpc")), ("verify_claims", ("off", "model")), ("render", ("auto", "off")),
    ("executor", ("threads", "ray")), ("papers", ("on", "off", "only")),
)


def _validate(s: Settings) -> None:
    check_numbers(s)  # NaN, zero or negative timeouts, steps, caps, concurrency ...
    if s.cache_replay and s.cache_dir is None:
        raise ConfigError("replay needs a cache directory: --replay DIR (or AGENT_CACHE_DIR)", "cache_replay")
    for name, allowed in _CHOICES:
        if getattr(s, name) not in allowed:
            raise ConfigError(f"{setting_name(name)} must be {', '.join(allowed[:-1])} or {allowed[-1]}, "
                              f"not {getattr(s, name)!r}", name)
    check_search(s, setting_name)  # SEARCH_BACKENDS' names and keys, AGENT_PAPERS=only needing search
    for folder in s.docs_dirs:
        if not folder.is_dir():
            raise ConfigError(f"{setting_name('docs_dirs')} {folder}: no such folder", "docs_dirs")


_CHILD_ENV_NAMES = ("PATH", "LANG", "LANGUAGE", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR")


def inherited_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of this process's environment that the python tool's child may inherit."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k in _CHILD_ENV_NAMES or k.startswith("LC_")}
