"""The sources a task read and the check of the citations its answer makes to them.

Owns the per-task ledger that numbers every page, document or file a tool read (`ledger.py`, with `Read`,
what a tool declares), the facts a claim can be checked on (`facts.py`: numbers with units, dates, quoted
phrases), the deterministic citation check with its verdicts (`check.py`; the page of a PDF a citation's
passage is on: `pages.py`) and the optional model
verification (`verify.py`). Pure text: may import core only, never models, tools or reports, so every layer
above (tools declaring reads, the agent filling the ledger, run and report showing verdicts) can import it.
"""
