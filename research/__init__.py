"""Deep research (`main.py research`): one question in, a sectioned report out, every citation checked first.

Owns the pipeline above run/'s batch machinery: the plan of sub-questions (plan.py), researching them as
ordinary tasks side by side through the run's executor, threads or Ray (gather.py), one numbered source
list over all of them (pool.py), the writer and its cut-off replies (write.py), its prompt fitted to its
model's window (fit.py), the check of every claim
against the stored text of the source it cites with one repair round and marks on what still fails
(repair.py), the research run in the run store (store.py), the whole run and its rounds (pipeline.py), the
plan as a file and the follow-up rounds (steer.py), --language (language.py), report.pdf and report.docx
(export.py), serve-mcp's deep_research (mcp.py), its cost estimate (estimate.py) and the command (cli.py).
The report's data and files are report/research.py's.
May import every layer below it (run/ and down); only ui/, evals/ and main.py import it.
"""
