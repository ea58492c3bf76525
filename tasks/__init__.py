"""Task files and answer scoring: the Task type, .txt / .jsonl / .json / GAIA parquet readers, graders.

Owns reading and checking task files (tasks/taskfile.py, with GAIA's field mapping), GAIA's parquet
layout (tasks/gaia.py), and the GAIA-style scorer with its number reader (tasks/scoring.py,
tasks/numbers.py). May import core and config only: nothing here knows of models, tools or reports.
"""
