"""The run's headless browser and the browser tool that operates pages in it.

Owns one headless Chromium per run (headless.py: Browser, render, the run's event loop), how it is launched
as an unprivileged user and ended with every process it started (launch.py), the guard proxy every
connection of it goes through (proxy.py) and its memory bound (memory.py); the browser tool (tool.py) with
a task's context and tabs (page.py), its actions (actions.py), the snapshot with refs (snapshot.py), the
judging of every request and redirect hop a page makes, cross-site posts refused (requests.py), text a
person does not see kept out (hidden.py), downloads held to the workspace budget (downloads.py), and a
page printed to PDF in that browser (pdf.py: a research report's report.pdf). May import core, config,
sources, the tools base modules (processes, safe_open, sandbox, secrets_guard), tools/documents and the
rest of tools/web (its errors, policy, domains, robots, politeness, session, html_page, scrape's file
names); tools/web's session and html_page import the browser back only for Browser and RenderedPage.
"""
