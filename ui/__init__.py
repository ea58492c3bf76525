"""The local web app (`main.py ui`): ask, watch the steps stream, stop, follow up, browse past runs.

Owns the Starlette app and its routes (app.py), the Host/token door as ASGI middleware (middleware.py, over
report/html/guard.py), the conversations it is running now (sessions.py), the JSON it shows (views.py), the
server's command line (server.py) and the vendored page (static/). It may import every layer below main.py
(run/ for the one engine, runs/ for the store, report/ for timelines); Starlette and uvicorn are imported
only when the command runs (requirements-ui.txt).
"""
