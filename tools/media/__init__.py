"""The tools for images and sound: look (a vision model) and transcribe (speech-to-text), with their helpers.

Owns preparing images for vision APIs (images.py), audio types and splitting (audio.py), the
speech-to-text calls and their Segment type (speech.py), and the look and transcribe tools. May import
core, config, providers, llm.py, the cache, the tools base modules, tools/documents (to read PDF pages
and slides) and tools/web (to fetch a URL with scrape's rules).
"""
