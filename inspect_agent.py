"""The agent as an Inspect solver: `inspect eval TASK --solver inspect_agent.py@react_agent --model M`.

    inspect eval inspect_evals/simpleqa --solver inspect_agent.py@react_agent --model openai/gpt-4o-mini
    inspect eval inspect_evals/gaia -S max_steps=20 --solver inspect_agent.py@react_agent --model ...
    inspect eval inspect_evals/simpleqa --solver inspect_agent.py@research_agent -S depth=2 --model ...

Each sample runs this agent's own loop, tools, memory and citation check (react_agent) or the deep research
pipeline (research_agent) with the model Inspect evaluates, through Inspect's model API; docs/inspect.md says
what scripts may rely on. The project's imports stay at the top: Inspect puts this file's folder on sys.path
only while it loads the file. inspect_ai itself is needed (pip install -r requirements-inspect.txt).
"""

from __future__ import annotations

from typing import Any

from evals.solver import AgentOptions, names, run_react, run_research

try:
    from inspect_ai.solver import Generate, Solver, TaskState, solver
except ImportError as exc:  # pragma: no cover - Inspect is what loads this file
    raise ImportError(f"inspect_agent.py needs inspect-ai ({exc}): pip install -r requirements-inspect.txt") from exc


@solver
def react_agent(tools: str | list[str] | None = None, max_steps: int | None = None, answer_style: str | None = None,
                search: bool | None = None, max_tokens: int | None = None,
                temperature: float | None = None) -> Solver:
    """This agent's ReAct loop on each sample.

    Args:
      tools: the tools it gets (`-S tools=python,read_file`); default: every tool it gets on the command line.
      max_steps: tool steps per sample (AGENT_MAX_STEPS).
      answer_style: plain, concise or cited (AGENT_ANSWER_STYLE).
      search: False: no web search tools (AGENT_SEARCH).
      max_tokens: a reply's token budget (AGENT_MAX_TOKENS).
      temperature: the sampling temperature (AGENT_TEMPERATURE).
    """
    options = AgentOptions(tools=names(tools), max_steps=max_steps, answer_style=answer_style, search=search,
                           max_tokens=max_tokens, temperature=temperature)
    settings = options.settings()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result: Any = await run_react(state, settings, options)
        return result  # type: ignore[no-any-return]

    return solve


@solver
def research_agent(depth: int = 1, breadth: int | None = None, max_steps: int | None = None,
                   search: bool | None = None, max_tokens: int | None = None) -> Solver:
    """The deep research pipeline on each sample: its answer the report's short answer with its `[n]`, the whole
    report in state.metadata["report"].

    Args:
      depth: research rounds (each after the first planned from what the last one found).
      breadth: sub-questions at most per round.
      max_steps: tool steps per sub-question (AGENT_MAX_STEPS).
      search: False: no web search tools (AGENT_SEARCH).
      max_tokens: a reply's token budget (AGENT_MAX_TOKENS).
    """
    options = AgentOptions(max_steps=max_steps, search=search, max_tokens=max_tokens, depth=depth, breadth=breadth)
    settings = options.settings()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result: Any = await run_research(state, settings, options)
        return result  # type: ignore[no-any-return]

    return solve
