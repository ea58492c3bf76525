"""Limits one run shares across a Ray cluster: the run's spend cap lives in a named Ray actor every node asks.

A task on any node reserves and settles its calls' cost with the one actor, so eight nodes do not spend
eight times the cap (--max-run-cost); the per-task caps stay in each task's own TaskBudget.
"""

from __future__ import annotations

import uuid
from typing import Any

from config import Settings
from providers.budget import RunBudget

ACTOR_CONCURRENCY = 256  # calls served at once: a reserve() waiting for calls in flight must not block settle()


class BudgetKeeper:
    """The Ray actor's body: the run's one RunBudget, which every node's tasks reserve from and settle with."""

    def __init__(self, settings: Settings, price: tuple[float, float] | None, model: str) -> None:
        self.budget = RunBudget(settings, price, model)

    def may_start(self) -> bool:
        """False (and counted as skipped) once the run's cap has been reached."""
        return self.budget.may_start()

    def reserve(self, cost: float | None, factor: int) -> tuple[str | None, float]:
        """RunBudget.reserve on the cluster's one budget."""
        return self.budget.reserve(cost, factor)

    def settle(self, reserved: float, cost: float | None) -> None:
        """RunBudget.settle on the cluster's one budget."""
        self.budget.settle(reserved, cost)

    def state(self) -> tuple[str | None, int, float]:
        """(why no new task may start, tasks skipped, USD spent) for the driver's report."""
        return self.budget.exhausted, self.budget.skipped, self.budget.spent


class ClusterBudget(RunBudget):
    """A RunBudget whose shared state is the run's BudgetKeeper actor: the same caps on every node."""

    def __init__(self, settings: Settings, price: tuple[float, float] | None, model: str, actor: Any) -> None:
        super().__init__(settings, price, model)
        self.actor = actor

    @classmethod
    def start(cls, ray: Any, budget: RunBudget) -> ClusterBudget:
        """Create the run's actor (named, so it shows as the run's in `ray list actors`) seeded from `budget`."""
        keeper = ray.remote(BudgetKeeper).options(
            name=f"agent-budget-{uuid.uuid4().hex[:12]}", num_cpus=0, max_concurrency=ACTOR_CONCURRENCY)
        return cls(budget.settings, budget.price, budget.model, keeper.remote(budget.settings, budget.price,
                                                                                 budget.model))

    def may_start(self) -> bool:
        """The actor's answer: the cap is the whole cluster's."""
        return bool(self._ask("may_start"))

    def reserve(self, cost: float | None, factor: int) -> tuple[str | None, float]:
        """Reserve from the cluster's budget (waits there for calls in flight on any node)."""
        if self.settings.max_run_cost is None or cost is None:
            return None, 0.0  # nothing to share: no round trip
        reason, held = self._ask("reserve", cost, factor)
        if reason:
            self.exhausted = self.exhausted or reason
        return reason, held

    def settle(self, reserved: float, cost: float | None) -> None:
        """Settle with the cluster's budget (only the run's cost cap is shared: without one, no round trip)."""
        if self.settings.max_run_cost is not None:
            self._ask("settle", reserved, cost)

    def copy_to(self, local: RunBudget) -> None:
        """Give the driver's own budget the cluster's final state, so the report says what a local run says."""
        local.exhausted, local.skipped, local.spent = self._ask("state")

    def _ask(self, method: str, *args: Any) -> Any:
        import ray  # heavy optional dependency: only a run with --executor ray gets here

        return ray.get(getattr(self.actor, method).remote(*args))
