"""Reports of a run: results.md and its JSON-lines twin, the run's note, and results.html with the live view.

Owns the TaskRecord and how records are written and read (report/markdown.py), what a run says about
itself beyond its records (report/note.py), and the self-contained HTML page and --serve live view
(report/html/). May import core, config and tasks; never models, tools or the agent (a record is data).
"""
