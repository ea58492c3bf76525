"""Reading provider error bodies: exhausted quotas and spend limits, account/region blocks, waits in messages.

Structured fields are read first (OpenAI's `code`, Gemini's google.rpc.QuotaFailure); the message text is the
fallback, because Anthropic only says it in words and proxies often flatten bodies to a string.
"""

from __future__ import annotations

import re
from typing import Any

from core.errors import LLMFatalError

BILLING_PAGES = {
    "OpenAI": "https://platform.openai.com/settings/organization/billing",
    "Anthropic": "https://console.anthropic.com/settings/limits",
    "Gemini": "https://aistudio.google.com/usage (limits: https://ai.google.dev/gemini-api/docs/rate-limits)",
    "OpenRouter": "https://openrouter.ai/settings/credits",
    "Groq": "https://console.groq.com/settings/limits",
    "DeepSeek": "https://platform.deepseek.com/usage",
    "Mistral": "https://admin.mistral.ai/organization/usage",
    "Together": "https://api.together.ai/settings/billing",
    "Fireworks": "https://app.fireworks.ai/account/billing",
    "xAI": "https://console.x.ai",
    "Azure OpenAI": "https://portal.azure.com (the resource's Quotas page in Azure AI Foundry)",
}
REGIONS_PAGE = "https://ai.google.dev/gemini-api/docs/available-regions"

# Message fragments (lower case) that mean the account cannot be billed again until someone acts or a
# period ends: retrying within a run cannot help.
_SPENT_PHRASES = (
    "insufficient_quota",
    "credit balance is too low",
    "monthly spend limit",  # Anthropic 429 "would exceed your account's monthly spend limit"
    "specified api usage limits",  # Anthropic 400 "You have reached your specified API usage limits"
    "workspace api usage limits",  # Anthropic 400, workspace-level cap
    "exceeded your current quota, please check your plan and billing",  # OpenAI insufficient_quota text
)
_BLOCKED_PHRASES = (
    "user location is not supported",  # Gemini 400 FAILED_PRECONDITION
)
_LIMIT_ZERO = re.compile(r"\blimit:\s*0\b")
_WAIT = re.compile(r"(?:try again|retry) in\s+((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)", re.IGNORECASE)
_WAIT_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class AccountBlockedError(LLMFatalError):
    """The provider refuses this account or region outright (e.g. Gemini's unsupported location)."""


def wait_in_message(message: str) -> float | None:
    """Seconds from "Please try again in 23.03s" / "1m2.6s" / "644ms" / "retry in 5.2s"; None if absent."""
    match = _WAIT.search(message or "")
    if not match:
        return None
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _WAIT_PART.findall(match.group(1)))


def quota_violations(body: Any) -> list[dict[str, Any]]:
    """The violations of a google.rpc.QuotaFailure detail in a Google API error body."""
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    found: list[dict[str, Any]] = []
    for item in details if isinstance(details, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.QuotaFailure"):
            found += [v for v in item.get("violations") or [] if isinstance(v, dict)]
    return found


def _violation_is_spent(violation: dict[str, Any]) -> bool:
    # A per-day quota does not come back within a run; a limit of 0 never comes back on this tier.
    quota_id = str(violation.get("quotaId", ""))
    return "PerDay" in quota_id or str(violation.get("quotaValue", "")).strip() == "0"


def spent_reason(status: int | None, message: str, code: str | None, body: Any) -> str | None:
    """Why the account's quota or spend is exhausted (a short phrase), or None if this is not that."""
    if code == "insufficient_quota" or status == 402:
        return "no credit or quota left"
    violations = quota_violations(body)
    if violations:
        spent = [v for v in violations if _violation_is_spent(v)]
        if not spent:
            return None  # a per-minute quota: a rate limit that clears
        return f"quota {spent[0].get('quotaId') or spent[0].get('quotaMetric')} is used up"
    text = f"{message} {body}".lower()
    if status == 429 and _LIMIT_ZERO.search(text):
        return "this model has a quota of 0 on this plan (limit: 0)"
    phrase = next((p for p in _SPENT_PHRASES if p in text), None)
    return f"'{phrase}'" if phrase else None


def blocked_reason(status: int | None, message: str) -> str | None:
    """Why the provider refuses this account or region for every request, or None."""
    text = (message or "").lower()
    if status in (400, 403) and any(p in text for p in _BLOCKED_PHRASES):
        return "the provider does not serve requests from this location"
    return None


def billing_hint(provider: str) -> str:
    """Where the user can check or raise this provider's quota or spend limit."""
    page = BILLING_PAGES.get(provider)
    return f"Check the plan, billing and limits at {page}" if page else "Check the account's plan and billing"
