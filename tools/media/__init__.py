"""The tools for images, sound and video: look (a vision model), transcribe (speech-to-text), watch (video).

Owns the images shown to vision APIs (images.py: made in the documents' converter child by
tools/documents/pictures.py), audio types and splitting (audio.py), the
speech-to-text calls and their Segment type (speech.py), video frames and sound with imageio-ffmpeg
(video.py), and the look, transcribe and watch tools. May import
core, config, providers, llm.py, the cache, the tools base modules, tools/documents (to read PDF pages
and slides) and tools/web (to fetch a URL with scrape's rules).
"""
