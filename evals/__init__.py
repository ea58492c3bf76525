"""The agent as an Inspect (UK AISI `inspect-ai`) solver: one sample of an eval run as one task of the agent.

Owns the glue `inspect_agent.py` (the root entry `inspect eval --solver inspect_agent.py@react_agent` loads)
calls: `solver.py` (a sample's settings, the worker thread it runs in, stopping it when Inspect's limits or a
cancellation end the sample, the react and research runs) and `sample.py` (a sample's files copied from its
sandbox into the workspace, the agent's tool calls as Inspect tool events and its turns as the sample's
messages, `state.metadata["agent"]` / `["report"]`). A package of its own above research/, because
`research_agent` runs research/'s pipeline and `react_agent` run/'s task machinery (BatchRunner.run_task,
build_agent, the run store): neither of them may import the other layer. The model calls go through
providers/inspect_model.py (`inspect:MODEL`). May import every layer below it (research/ and down); only
inspect_agent.py imports it. inspect_ai is imported when a sample runs (requirements-inspect.txt).
"""
