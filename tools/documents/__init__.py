"""Documents as text: HTML pages, PDF, Office files, spreadsheets, EPUB, ZIP, JSON and XML as Markdown.

Owns format detection (detect.py), conversion (convert.py and one module per family: pdf, office,
sheets, archives, text), pictures for vision models (pictures.py: an image decoded and downscaled, a PDF page's
or a slide's pictures), the main content of an HTML page (page_text.py, mended by extraction_choice.py),
read_file's paging of a converted document (reading.py), and a document cut into the units the document
index cites (units.py: PDF pages, slides, sheets, sections). Every conversion of a document's bytes (and every
other parse of untrusted bytes: pictures, ZIP members, fetched pages) runs in a child under a memory and a time
limit (confined.py, on tools/sandbox/forks.py; worker.py is what the child runs). It reads bytes it is given
and never fetches: tools/web imports it, not the other way round. May import core, config, docindex (Unit,
Unreadable), tools.sandbox and the tools base modules.
"""
