"""What the model reads and writes: the ReAct text protocol, repairs of real replies, and the memory.

Owns the system prompt and the tolerant parser (prompt/protocol.py), repairs for what models write
around the format (prompt/repair.py), the token-budgeted memory with its summaries (prompt/memory.py), and
what a follow-up question carries of its conversation (prompt/history.py).
May import core, config, providers, llm.py, the cache and tools (the prompt lists the tools); only
agent.py and the run layer above import it.
"""
