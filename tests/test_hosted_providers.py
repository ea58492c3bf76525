"""Azure OpenAI, OpenRouter, the named OpenAI-compatible hosts and the models file, through main.py as a user
runs it: loopback servers that speak each one's documented wire format (paths, key headers, Azure's api-version,
OpenRouter's usage.cost), fed real recorded bodies (tests/fixtures/real_api/hosted.json)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from providers.hosts import HOSTS
from tests.fakes.cli import clean_env, run_main, trust
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.real_traffic import recorded

TASK = "What is six times seven?"
DEPLOYMENT = "research-4o"


def hosted(file: str = "hosted.json") -> Any:
    return lambda name: recorded(name, file)


fixture = hosted()


def serve(path: str, reply: Response) -> Any:
    """A handler answering POSTs to exactly `path` (query ignored) with `reply`; anything else is a 404."""

    def handle(req: Request) -> Response:
        if req.method == "POST" and urlsplit(req.path).path == path:
            return reply
        return Response(404, {"error": {"message": f"fake server: unexpected {req.method} {req.path}"}})

    return handle


def run_task(tmp: Path, model: str, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp / "tasks.txt").write_text(TASK + "\n")
    return run_main(tmp, "tasks.txt", "-o", "results.md", "--model", model, "-q", *extra,
                    env=clean_env(AGENT_SEARCH="0", AGENT_MAX_RETRIES="0", **env))


def record(tmp: Path) -> dict[str, Any]:
    return dict(json.loads((tmp / "results.jsonl").read_text().splitlines()[0]))


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_a_named_host_gets_its_documented_path_its_key_and_the_model(tmp_path: Path, name: str) -> None:
    host = HOSTS[name]
    path = urlsplit(host.base_url).path + "/chat/completions"  # where the real API answers
    with LoopbackServer(serve(path, openai_reply("Final Answer: 42", model="vendor/model"))) as server:
        env = {host.key_env: f"key-of-{name}", f"{name.upper()}_BASE_URL": server.url + urlsplit(host.base_url).path}
        proc = run_task(tmp_path, f"{name}:vendor/model", env)
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert urlsplit(request.path).path == path
    assert request.headers["authorization"] == f"Bearer key-of-{name}"
    assert request.json()["model"] == "vendor/model"
    assert record(tmp_path)["answer"] == "42"


def test_openrouter_reported_cost_is_the_task_cost_and_attribution_headers_are_sent(tmp_path: Path) -> None:
    with LoopbackServer(serve("/api/v1/chat/completions", fixture("openrouter_reply"))) as server:
        proc = run_task(tmp_path, "openrouter:anthropic/claude-sonnet-4", {
            "OPENROUTER_API_KEY": "sk-or-v1-test", "OPENROUTER_BASE_URL": server.url + "/api/v1",
            "OPENROUTER_SITE_URL": "https://lab.example.org", "OPENROUTER_APP_NAME": "lab agent"})
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert request.headers["http-referer"] == "https://lab.example.org"
    assert request.headers["x-title"] == "lab agent"
    assert record(tmp_path)["cost"] == pytest.approx(0.95)  # usage.cost as OpenRouter reported it
    assert "$0.95" in (tmp_path / "results.md").read_text()


def azure_env(server: LoopbackServer, **extra: str) -> dict[str, str]:
    return {"AZURE_OPENAI_ENDPOINT": server.url, "AZURE_OPENAI_API_KEY": "azure-key-0123456789", **extra}


def test_azure_deployment_path_with_api_version_and_api_key_header(tmp_path: Path) -> None:
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    with LoopbackServer(serve(path, fixture("azure_reply"))) as server:
        proc = run_task(tmp_path, f"azure:{DEPLOYMENT}", azure_env(server, OPENAI_API_VERSION="2024-10-21"))
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert parse_qs(urlsplit(request.path).query) == {"api-version": ["2024-10-21"]}
    assert request.headers["api-key"] == "azure-key-0123456789" and "authorization" not in request.headers
    assert "max_completion_tokens" in request.json()
    rec = record(tmp_path)
    assert rec["answer"] == "42"
    # The reply names gpt-4o-2024-08-06, but a deployment's price is the models file's word or unknown.
    assert rec["cost"] is None


def test_azure_v1_path_without_an_api_version(tmp_path: Path) -> None:
    with LoopbackServer(serve("/openai/v1/chat/completions", fixture("azure_reply"))) as server:
        proc = run_task(tmp_path, f"azure:{DEPLOYMENT}", azure_env(server))
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert urlsplit(request.path).query == ""
    assert request.headers["api-key"] == "azure-key-0123456789"
    assert request.json()["model"] == DEPLOYMENT


def test_azure_entra_id_token_is_a_bearer_token(tmp_path: Path) -> None:
    path = f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    with LoopbackServer(serve(path, fixture("azure_reply"))) as server:
        env = {"AZURE_OPENAI_ENDPOINT": server.url, "AZURE_OPENAI_AD_TOKEN": "eyJ0eXAi.entra.token",
               "OPENAI_API_VERSION": "2024-10-21"}
        proc = run_task(tmp_path, f"azure:{DEPLOYMENT}", env)
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer eyJ0eXAi.entra.token" and "api-key" not in request.headers


def test_an_unknown_azure_deployment_is_one_line_naming_it_and_exit_2(tmp_path: Path) -> None:
    with LoopbackServer(lambda req: fixture("azure_deployment_not_found")) as server:
        proc = run_task(tmp_path, "azure:no-such-deployment", azure_env(server, OPENAI_API_VERSION="2024-10-21"))
    assert proc.returncode == 2
    [line] = error_lines(proc)
    assert "deployment no-such-deployment not found (404) at Azure OpenAI" in line
    assert "AZURE_OPENAI_ENDPOINT" in line
    assert len(server.requests) == 1  # not retried: every task would fail alike


@pytest.mark.parametrize(("model", "reply", "env"), [
    (f"azure:{DEPLOYMENT}", "azure_invalid_key", {"OPENAI_API_VERSION": "2024-10-21"}),
    ("openrouter:openai/gpt-4o", "openrouter_invalid_key", {}),
    ("groq:llama-3.3-70b-versatile", "groq_invalid_key", {}),
])
def test_a_rejected_key_is_one_line_naming_the_variable_and_exit_2(tmp_path: Path, model: str, reply: str,
                                                                   env: dict[str, str]) -> None:
    provider = model.split(":")[0]
    (tmp_path / "tasks.txt").write_text("one\n\ntwo\n")
    with LoopbackServer(lambda req: fixture(reply)) as server:
        variables = azure_env(server) if provider == "azure" else {
            f"{provider.upper()}_API_KEY": "wrong-key-0123456789", f"{provider.upper()}_BASE_URL": server.url + "/v1"}
        proc = run_main(tmp_path, "tasks.txt", "-o", "results.md", "--model", model, "-q",
                        env=clean_env(AGENT_SEARCH="0", **variables, **env))
    assert proc.returncode == 2
    [line] = error_lines(proc)
    variable = "AZURE_OPENAI_API_KEY" if provider == "azure" else f"{provider.upper()}_API_KEY"
    assert f"{variable} was rejected (401)" in line
    assert "wrong-key" not in line and "azure-key" not in line  # the variable is named, never the key
    assert len(server.requests) == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_missing_key_names_the_variable_before_any_request(tmp_path: Path) -> None:
    proc = run_task(tmp_path, "deepseek:deepseek-chat", {})
    assert proc.returncode == 2
    [line] = error_lines(proc)
    assert "deepseek:deepseek-chat needs DEEPSEEK_API_KEY" in line


MODELS_FILE = """
[fast]
provider = "openai"
model = "qwen2.5-72b-instruct"
base_url = "{url}/v1"
api_key_env = "GPU_BOX_KEY"
input_price = 2.0
output_price = 10.0
headers = {{ "X-Team" = "research" }}
"""


def test_a_models_file_alias_is_a_model_with_its_endpoint_key_headers_and_prices(tmp_path: Path) -> None:
    reply = openai_reply("Final Answer: 42", prompt_tokens=1000, completion_tokens=100, model="qwen2.5-72b-instruct")
    with LoopbackServer(serve("/v1/chat/completions", reply)) as server:
        (tmp_path / "models.toml").write_text(MODELS_FILE.format(url=server.url))
        trust(tmp_path)  # its alias sends a key to its own base_url: the user trusted the folder
        proc = run_task(tmp_path, "fast", {"GPU_BOX_KEY": "gpu-box-secret-key", "OPENAI_API_KEY": "sk-openai-own"})
    assert proc.returncode == 0, proc.stderr
    [request] = server.requests
    assert request.headers["authorization"] == "Bearer gpu-box-secret-key"  # never OPENAI_API_KEY
    assert request.headers["x-team"] == "research"
    assert request.json()["model"] == "qwen2.5-72b-instruct"
    rec = record(tmp_path)
    assert rec["cost"] == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1_000_000)  # the alias's own prices
    run_settings = next((tmp_path / "runs").glob("*/settings.json")).read_text()
    assert "gpu-box-secret-key" not in run_settings and "sk-openai-own" not in run_settings


@pytest.mark.parametrize(("text", "said"), [
    ('[fast]\nmodel = "m"\nprovider = "bedrock"\n', "alias 'fast': unknown provider 'bedrock'"),
    ('[fast]\nprovider = "openai"\n', "alias 'fast': needs model"),
    ('[fast]\nmodel = "m"\ninput_price = 1.0\n', "alias 'fast': give both input_price and output_price"),
    ('[fast]\nmodel = "m"\napi_key = "sk-123"\n', "alias 'fast': unknown field 'api_key'"),
    ("[fast\nmodel = 1\n", "not valid TOML"),
])
def test_a_bad_models_file_is_one_line_naming_the_file_and_the_alias(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "models.toml").write_text(text)
    proc = run_task(tmp_path, "fast", {})
    assert proc.returncode == 2
    [line] = error_lines(proc)
    assert "models.toml" in line and said in line


def test_every_named_host_and_azure_is_a_provider_prefix_with_a_billing_page() -> None:
    from core.chat import PROVIDERS, split_spec
    from providers.errors import BILLING_PAGES

    assert set(HOSTS) | {"azure"} <= set(PROVIDERS)
    assert all(split_spec(f"{name}:vendor/model") == (name, "vendor/model") for name in HOSTS)
    assert {h.label for h in HOSTS.values()} <= set(BILLING_PAGES)


def test_openrouter_out_of_credit_is_named_with_its_billing_page_and_exit_2(tmp_path: Path) -> None:
    reply = Response(402, {"error": {"message": "Insufficient credits. Add more using https://openrouter.ai/credits",
                                     "code": 402}})
    with LoopbackServer(lambda req: reply) as server:
        proc = run_task(tmp_path, "openrouter:openai/gpt-4o", {"OPENROUTER_API_KEY": "sk-or-v1-test",
                                                               "OPENROUTER_BASE_URL": server.url + "/api/v1"})
    assert proc.returncode == 2
    assert "OpenRouter account's quota or spend limit is exhausted" in proc.stderr
    assert "https://openrouter.ai/settings/credits" in proc.stderr


def test_an_alias_context_window_sizes_the_prompt_budget_and_its_prices_price_it() -> None:
    from config import Settings
    from core.models_file import ModelAlias
    from prompt.memory import DEFAULT_BUDGET, default_budget
    from providers.pricing import cost_usd, settings_prices

    aliases = (ModelAlias("box", "openai", "m", context_window=16_384),
               ModelAlias("mini", "openai", "gpt-4o-mini", base_url="http://127.0.0.1:9/v1"),
               ModelAlias("dep", "azure", "gpt-4o"))
    settings = Settings(model_aliases=aliases, max_tokens=2048)
    assert default_budget(settings, "box") < 16_384 and default_budget(Settings(), "box") == DEFAULT_BUDGET
    table = settings_prices(settings)
    assert cost_usd("mini", 1_000_000, 0, table) == pytest.approx(0.15)  # no prices of its own: its model's
    assert cost_usd("dep", 1_000_000, 0, table) is None  # an Azure deployment's name says nothing of its model
    assert cost_usd("azure:gpt-4o", 1_000_000, 0, table) is None


def test_a_replay_of_a_hosted_model_needs_no_key(tmp_path: Path) -> None:
    with LoopbackServer(serve("/openai/v1/chat/completions", openai_reply("Final Answer: 42"))) as server:
        env = {"GROQ_API_KEY": "gsk-test-key", "GROQ_BASE_URL": server.url + "/openai/v1"}
        first = run_task(tmp_path, "groq:llama-3.3-70b-versatile", env, "--cache", "cache")
        assert first.returncode == 0, first.stderr
        again = run_task(tmp_path, "groq:llama-3.3-70b-versatile", {"GROQ_BASE_URL": env["GROQ_BASE_URL"]},
                         "--replay", "cache")
    assert again.returncode == 0, again.stderr
    assert len(server.requests) == 1 and record(tmp_path)["answer"] == "42"
