"""check_setup's rows about models: the model main.py would use and its live probe, each other role's model
(fallback, summary, vision, transcribe, planner, writer), and the system prompt that fits the model's window;
`Check`, one row of the report, with its marks.

May import everything below run/ (llm, prompt, providers, tools) and run/batch.py's task tools.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import cancellation
from core.chat import split_spec
from core.errors import ConfigError, ContextWindowError, EmptyCompletionError, LLMError
from llm import LLMInterface, build_llm, context_window, default_model, local_context_window
from prompt.memory import TokenEstimator, default_budget
from prompt.protocol import fitted_system_prompt, render_system_prompt
from prompt.window import refit_budget
from providers.common import SILENT_MODEL
from providers.context_window import dropped_prompt_warning, is_local
from providers.embeddings import EmbeddingsFailed, embedder_of
from providers.registry import KEY_ENV, endpoint_of
from run.batch import task_tools
from tools.base import ToolRegistry

OK, WARN, FAIL = "✓", "!", "✗"
NO_MODEL_HELP = ("set one of OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY in .env (see .env.example), "
                 "or run a local Ollama server (`ollama serve`) and pass --model ollama:MODEL")


@dataclass
class Check:
    """One line of the report."""

    name: str
    mark: str
    detail: str
    fix: str = ""


def main_model(settings: Any) -> str | None:
    """The model main.py would use (--model, or the one chosen automatically); None when there is none."""
    try:
        return str(settings.model or default_model(settings))
    except ConfigError:
        return None


def role_specs(settings: Any) -> list[tuple[str, str]]:
    """(role, model) of each other model a run calls: fallback, summary, vision, transcribe, planner, writer, judge
    (those set and not the main model)."""
    roles = [*(("fallback", m) for m in settings.fallback_models), ("summary", settings.summary_model),
             ("vision", settings.vision_model), ("transcribe", settings.transcribe_model),
             ("planner", settings.planner_model), ("writer", settings.writer_model), ("judge", settings.judge_model)]
    return [(role, spec) for role, spec in roles if spec and spec != settings.model]


def key_needs(settings: Any, main: str | None) -> dict[str, list[str]]:
    """The key variable each chosen model sends (a models-file alias its own, a local server none), with the
    models that need it: `{"OPENAI_API_KEY": ["the model openai:gpt-4.1-mini", "the vision model ..."]}`."""
    needs: dict[str, list[str]] = {}
    chosen = ([("", main)] if main else []) + role_specs(settings)
    for role, spec in chosen:
        where = endpoint_of(spec, settings)
        if where is not None and where.key_env:
            needs.setdefault(where.key_env, []).append(f"the {role + ' ' if role else ''}model {spec}")
    return needs


def key_value(settings: Any, variable: str) -> str | None:
    """The value of a key variable: a provider's own (OPENAI_API_KEY ...) or one a host or alias names."""
    provider = next((p for p, v in KEY_ENV.items() if v == variable), None)
    return settings.api_key_for(provider) if provider else settings.provider_env(variable)


def check_model(settings: Any, offline: bool, main: str | None = None) -> list[Check]:
    """The model main.py would use (built the same way; `main`: that model, already chosen), and (unless offline)
    a short live request to it."""
    try:  # a real request, never a cached one
        llm = build_llm(dataclasses.replace(settings, cache_dir=None, model=main or settings.model))
    except ConfigError as exc:
        return [Check("model", FAIL, str(exc).splitlines()[0], NO_MODEL_HELP)]
    where = endpoint_of(llm.model, settings)
    rows = [Check("model", OK, llm.model + ("" if settings.model else " (chosen automatically)")
                  + (f": {where.describe()}" if where else ""))]
    if offline:
        return [*rows, Check("model request", WARN, "skipped (--offline)")]
    provider, model = split_spec(llm.model)
    return [*rows, probe_model(llm, LOCAL_PROBE_TOKENS if is_local(provider, model, settings) else PROBE_MAX_TOKENS)]


def check_roles(settings: Any, offline: bool) -> list[Check]:
    """Each other configured model (role_specs): its provider, host and key variable, and a short call (not to the
    speech-to-text model, which does not chat)."""
    rows = []
    for role, spec in role_specs(settings):
        where = endpoint_of(spec, settings)
        try:
            llm = LLMInterface.from_spec(spec, dataclasses.replace(settings, cache_dir=None))
        except ConfigError as exc:
            rows.append(Check(f"{role} model", FAIL, f"{spec}: {str(exc).splitlines()[0]}"))
            continue
        probe = Check("", OK, "not called (--offline)" if offline else "not called (speech to text)") \
            if offline or role == "transcribe" else probe_model(llm)
        rows.append(Check(f"{role} model", probe.mark, f"{spec}: {where.describe() if where else '?'}; {probe.detail}",
                          probe.fix))
    return rows


def check_prompt(settings: Any, model_rows: list[Check], main: str | None = None) -> list[Check]:
    """The agent's system prompt (size, tools, compact or not) and the model's window (`main`: the model check_model
    was given, not chosen again); a local server that answered the probe gets it once as a task's first request
    does, so a window too small for it, or a chat template that drops it, shows here."""
    if len(model_rows) < 2:  # no model
        return []
    probe = model_rows[1]
    live = probe.mark != FAIL or probe.detail.startswith(SILENT)  # else a second request would fail alike
    return [prompt_row(settings, build_llm(dataclasses.replace(settings, cache_dir=None, model=main or settings.model)),
                       live and probe.detail != "skipped (--offline)")]


def prompt_row(settings: Any, llm: Any, live: bool) -> Check:
    """check_prompt's row for this model."""
    with tempfile.TemporaryDirectory(prefix="agent-check-") as scratch:
        tools = ToolRegistry(task_tools(settings, Path(scratch)))
    budget = default_budget(settings, llm.model)
    system = fitted_system_prompt(tools, settings.answer_style, budget, TokenEstimator().text_tokens)
    compact = system == render_system_prompt(tools, settings.answer_style, compact=True)
    window = local_context_window(llm.model, settings) or context_window(llm.model, settings=settings)
    detail = (f"{len(system):,} characters{full_needs(settings, tools) if compact else ''} for {len(tools)} tools; "
              f"prompt budget {budget:,} tokens; window {f'{window:,} tokens' if window else 'not reported'}")
    provider, model = split_spec(llm.model)
    if not live or not is_local(provider, model, settings):
        return Check("prompt", OK, detail)
    sent = [{"role": "system", "content": system}, {"role": "user", "content": "Reply with the single word: ok"}]
    try:  # a CPU server evaluates the whole prompt first: it gets the time a task's request gets
        with cancellation.scope(max(PROBE_DEADLINE, settings.request_timeout)):
            counted = llm.complete(sent, max_tokens=16).prompt_tokens
    except ContextWindowError as exc:
        return refitted_row(settings, llm, tools, system, exc)
    except EmptyCompletionError as exc:  # the prompt fitted; the empty reply is the model check's to report
        counted = exc.billed[0].prompt_tokens if exc.billed else 0
    except (LLMError, cancellation.TaskDeadlineExceeded) as exc:
        return Check("prompt", WARN, f"{detail}; not sent: {str(exc).splitlines()[0]}")
    dropped = dropped_prompt_warning(llm.model, sent, counted)
    if dropped:
        return Check("prompt", FAIL, f"{detail}; {dropped}", "fix the chat template the server applies")
    fits = f"{detail}; the server counted {counted:,} prompt tokens: it fits"
    if window is None:  # the agent learns it only from a refusal: replies cannot be sized to it before
        return Check("prompt", WARN, fits, "tell the agent the server's window: --context-window N "
                     "(AGENT_CONTEXT_WINDOW; llama-cpp-python: its --n_ctx)")
    return Check("prompt", OK, fits)


def full_needs(settings: Any, tools: ToolRegistry) -> str:
    """` (compact: the full prompt, N tokens, needs a window of about M)` for a row showing the compact prompt."""
    full = TokenEstimator().text_tokens(render_system_prompt(tools, settings.answer_style))
    return f" (compact: the full prompt, about {full:,} tokens, needs a window of about {_need(full, settings):,})"


def _need(full_tokens: int, settings: Any) -> int:
    """The window from which the full prompt is used: it may take at most half the prompt budget, after the reply."""
    return 2 * full_tokens + settings.max_tokens


def refitted_row(settings: Any, llm: Any, tools: ToolRegistry, system: str, exc: ContextWindowError) -> Check:
    """The server refused the prompt over the window it named: a run refits to that window (the compact prompt,
    agent.py's call_fitted), so this check does too and says which prompt fits and what the full one needs."""
    too_small = Check("prompt", FAIL, str(exc), "see docs/troubleshooting.md (a context smaller than the prompt)")
    if not exc.window:
        return too_small
    smaller = fitted_system_prompt(tools, settings.answer_style, refit_budget(exc.window, settings.max_tokens),
                                   TokenEstimator().text_tokens)
    if smaller == system:
        return too_small
    sent = [{"role": "system", "content": smaller}, {"role": "user", "content": "Reply with the single word: ok"}]
    try:
        with cancellation.scope(max(PROBE_DEADLINE, settings.request_timeout)):
            counted = llm.complete(sent, max_tokens=16).prompt_tokens
    except ContextWindowError as again:
        return Check("prompt", FAIL, str(again), too_small.fix)
    except EmptyCompletionError as empty:
        counted = empty.billed[0].prompt_tokens if empty.billed else 0
    except (LLMError, cancellation.TaskDeadlineExceeded) as failed:
        return Check("prompt", WARN, f"the full prompt does not fit; the compact one was not sent: "
                                     f"{str(failed).splitlines()[0]}")
    full = exc.prompt_tokens or TokenEstimator().text_tokens(system)
    need = _need(full, settings)
    return Check("prompt", WARN, f"the full prompt ({len(system):,} characters, about {full:,} tokens) does not "
                 f"fit the server's {exc.window:,}-token window; runs use the compact one ({len(smaller):,} "
                 f"characters, {counted:,} tokens counted), which fits",
                 f"for the full prompt start the server with a window of about {need:,} tokens or more "
                 "(llama-cpp-python: --n_ctx; llama-server: -c)")


# Thinking models spend part of max_tokens thinking before any visible text (gemini-2.5-pro answers
# max_tokens=5 with MAX_TOKENS and no text): the probe leaves room for that.
PROBE_MAX_TOKENS = 1024
LOCAL_PROBE_TOKENS = 64  # a small CPU model that rambles instead of answering "ok" would take minutes for 1,024
SILENT = "the model replied with no text"
PROBE_DEADLINE = 20.0  # seconds the live request may take, retries included: a silent wait helps nobody


def probe_model(llm: Any, max_tokens: int = PROBE_MAX_TOKENS) -> Check:
    """One short live request; a well-formed reply without visible text still proves the model reachable."""
    try:
        with cancellation.scope(PROBE_DEADLINE):
            c = llm.complete([{"role": "user", "content": "Reply with the single word: ok"}],
                             max_tokens=max_tokens)
    except cancellation.TaskDeadlineExceeded as exc:
        return Check("model request", FAIL, f"no answer within {PROBE_DEADLINE:g} s: {str(exc).splitlines()[0]}",
                     "check the base URL and that the server is up; a loaded local server may need a warm-up")
    except EmptyCompletionError as exc:
        if exc.finish_reason == "stop":  # it ended at once with nothing to say: no task would get an answer
            return Check("model request", FAIL, f"{SILENT} (it ended its reply at once: finish reason stop)",
                         f"likely {SILENT_MODEL}")
        return Check("model request", WARN, f"reachable, but the reply had no visible text: {exc}",
                     "a thinking model may need more room: raise --max-tokens or AGENT_MAX_TOKENS for runs")
    except LLMError as exc:
        return Check("model request", FAIL, str(exc).splitlines()[0], "see docs/troubleshooting.md")
    return Check("model request", OK, f"{c.model} answered {c.text.strip()[:20]!r} in {c.latency:.1f} s")


def check_embeddings(settings: Any, offline: bool) -> list[Check]:
    """The embeddings model of --docs searches, when one is set: one request's dimension and latency. An endpoint
    that fails is a warning (searches then rank by words alone); a model with no endpoint here fails."""
    spec = settings.embeddings_model
    if not spec:
        return []
    try:
        embedder = embedder_of(spec, settings)
    except ConfigError as exc:
        return [Check("embeddings", FAIL, str(exc), "set AGENT_EMBEDDINGS_MODEL to provider:model or an alias")]
    where = f"{spec} at {embedder.host}"
    if importlib.util.find_spec("numpy") is None:
        return [Check("embeddings", WARN, f"{where}; numpy is not installed",
                      "pip install -r requirements-embeddings.txt")]
    if offline:
        return [Check("embeddings", OK, f"{where}; not contacted (--offline)")]
    started = time.perf_counter()
    try:
        vector = embedder.embed(["a short text to check the embeddings endpoint"])[0]
    except EmbeddingsFailed as exc:
        return [Check("embeddings", WARN, str(exc), "fix the endpoint or the model's name; until then --docs "
                      "searches rank passages by their words alone (bm25)")]
    ms = (time.perf_counter() - started) * 1000
    return [Check("embeddings", OK, f"{where}: {len(vector)} dimensions, one request {ms:.0f} ms")]
