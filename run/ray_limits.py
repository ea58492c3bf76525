"""Limits one run shares across a Ray cluster: its spend and its rate limits live in named Ray actors.

Every node's tasks reserve and settle their calls' cost with one `SpendKeeper` actor (providers/spend.py's
RunSpend, so --max-run-cost holds for the whole cluster, not per node) and take their turns from one
`LimitsKeeper` actor (providers/ratelimit.py's RateWindow per provider, so --rpm / --tpm, the limits and
allowances the providers' rate-limit headers state and 429 pauses hold for the cluster). The callers wait on
their own side: the actors only answer short questions.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from providers.ratelimit import LimiterStatus, RateLimits, RateWindow, wait_turns
from providers.spend import LocalRunSpend, SpendTotals

# The actors live on the head node: a worker node that dies (and takes its tasks with it, to be retried)
# must not take the run's spend and rate limits too; the head's death ends the cluster anyway.
ON_HEAD = {"resources": {"node:__internal_head__": 0.001}, "num_cpus": 0}


def _ask(call: Any, *args: Any) -> Any:
    """Call an actor's method and wait for its answer."""
    import ray  # heavy optional dependency: only a run with --executor ray gets here

    return ray.get(call.remote(*args))


class SpendKeeper:
    """The Ray actor's body: the run's one LocalRunSpend."""

    def __init__(self, cap: float | None) -> None:
        self.spend = LocalRunSpend(cap)

    def reserve(self, least: float, most: float, keep: float) -> float | None:
        """LocalRunSpend.reserve."""
        return self.spend.reserve(least, most, keep)

    def settle(self, reserved: float, cost: float) -> None:
        """LocalRunSpend.settle."""
        self.spend.settle(reserved, cost)

    def stop_new(self, reason: str) -> None:
        """LocalRunSpend.stop_new."""
        self.spend.stop_new(reason)

    def may_start(self) -> bool:
        """LocalRunSpend.may_start."""
        return self.spend.may_start()

    def totals(self) -> SpendTotals:
        """LocalRunSpend.totals."""
        return self.spend.totals()


class ActorSpend:
    """A RunSpend whose state is the run's SpendKeeper actor (picklable: it holds only the actor's handle)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    @classmethod
    def start(cls, ray: Any, cap: float | None) -> ActorSpend:
        """Create the run's actor, named so that `ray list actors` shows it as the run's."""
        return cls(ray.remote(SpendKeeper).options(name=f"agent-spend-{uuid.uuid4().hex[:12]}", **ON_HEAD
                                                   ).remote(cap))

    def reserve(self, least: float, most: float, keep: float = 0.0) -> float | None:
        """Hold from the cluster's cap (see RunSpend)."""
        return _ask(self.actor.reserve, least, most, keep)  # type: ignore[no-any-return]

    def settle(self, reserved: float, cost: float) -> None:
        """Settle with the cluster's cap."""
        _ask(self.actor.settle, reserved, cost)

    def stop_new(self, reason: str) -> None:
        """No task may start anywhere on the cluster."""
        _ask(self.actor.stop_new, reason)

    def may_start(self) -> bool:
        """The cluster's answer."""
        return bool(_ask(self.actor.may_start))

    def totals(self) -> SpendTotals:
        """The cluster's spend."""
        return _ask(self.actor.totals)  # type: ignore[no-any-return]


class SettledSpend:
    """What the run spent, kept after the cluster is gone (the report and exit code read it)."""

    def __init__(self, totals: SpendTotals) -> None:
        self.final = totals

    def reserve(self, least: float, most: float, keep: float = 0.0) -> float | None:
        """Nothing more may be held: the run is over."""
        return None

    def settle(self, reserved: float, cost: float) -> None:
        """Nothing is in flight."""

    def stop_new(self, reason: str) -> None:
        """The run is over."""

    def may_start(self) -> bool:
        """No task starts after the run."""
        return False

    def totals(self) -> SpendTotals:
        """The cluster's final spend."""
        return self.final


class LimitsKeeper:
    """The Ray actor's body: one RateWindow per provider, on the actor's one clock."""

    def __init__(self) -> None:
        self.windows: dict[str, RateWindow] = {}

    def _window(self, name: str, rpm: int | None, tpm: int | None, limited: bool) -> RateWindow:
        if name not in self.windows:
            self.windows[name] = RateWindow(rpm, tpm, limited=limited)
        return self.windows[name]

    def try_acquire(self, name: str, rpm: int | None, tpm: int | None, prompt: int, reply: int = 0,
                    limited: bool = True) -> tuple[float, str]:
        """RateWindow.try_acquire, now."""
        return self._window(name, rpm, tpm, limited).try_acquire(time.time(), prompt, reply)

    def observe(self, name: str, rpm: int | None, tpm: int | None, headers: dict[str, str], prompt: int,
                reply: int = 0, limited: bool = True) -> None:
        """RateWindow.observe, now."""
        self._window(name, rpm, tpm, limited).observe(time.time(), headers, prompt, reply)

    def pause_until(self, name: str, rpm: int | None, tpm: int | None, t: float, reason: str,
                    limited: bool = True) -> None:
        """RateWindow.pause_until."""
        self._window(name, rpm, tpm, limited).pause_until(t, reason)


class ActorLimiter:
    """A Limiter whose window is in the run's LimitsKeeper actor: the caller naps between asks."""

    def __init__(self, actor: Any, name: str, rpm: int | None, tpm: int | None, limited: bool = True) -> None:
        self.actor, self.name, self.rpm, self.tpm, self.limited = actor, name, rpm, tpm, limited

    def acquire(self, prompt_tokens: int, reply_tokens: int = 0) -> float:
        """Block until the cluster's window lets one request go; the seconds waited."""
        return wait_turns(lambda now: tuple(_ask(self.actor.try_acquire, self.name, self.rpm, self.tpm, prompt_tokens,
                                                 reply_tokens, self.limited)), time.time, time.sleep)

    def observe(self, headers: Mapping[str, str], prompt_tokens: int, reply_tokens: int = 0) -> None:
        """Tell the cluster's window what a reply said."""
        _ask(self.actor.observe, self.name, self.rpm, self.tpm, dict(headers), prompt_tokens, reply_tokens,
             self.limited)

    def pause_until(self, t: float, reason: str = "") -> None:
        """Pause every caller on the cluster until `t`."""
        _ask(self.actor.pause_until, self.name, self.rpm, self.tpm, t, reason, self.limited)

    def status(self) -> LimiterStatus:
        """Waits on other nodes are not tracked here: the driver's progress line shows none."""
        return LimiterStatus(self.name)


def start_limits(ray: Any) -> Any:
    """The run's LimitsKeeper actor."""
    return ray.remote(LimitsKeeper).options(name=f"agent-limits-{uuid.uuid4().hex[:12]}", **ON_HEAD).remote()


def cluster_limits(actor: Any, rpm: int | None, tpm: int | None) -> RateLimits:
    """RateLimits whose limiters all live in the run's LimitsKeeper actor."""
    return RateLimits(rpm, tpm, factory=lambda name, r, t, limited: ActorLimiter(actor, name, r, t, limited))
