"""One run of a task file as main.py wires it: preflight checks, the batch, progress, results and stopping.

Owns executing a run from flags to exit code (execute.py), running tasks concurrently with traces and
resume (batch.py), the console progress (console.py), the results store (results.py), output paths and
locks (files.py), preflight checks (preflight.py), Ctrl-C handling (stopping.py), spend
caps and --replay-trace wiring (extras.py), `main.py serve-mcp` (serve_mcp.py), the run store that keeps
every run in its own folder (store.py), conversations of follow-up questions (conversation.py), `main.py
ask` and `chat` (by_hand.py) and `main.py runs` (runs_cli.py). May import every layer below it; only
main.py and check_setup.py import it.
"""
