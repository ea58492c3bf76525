"""The bottom layer: chat types, the error tree, cancellation, text and file helpers, images and which settings
are secret, how a setting's text becomes a value, reading a .env file.

Owns what every other package shares and nothing that does work of its own. Imports only the standard
library, python-dotenv (envfile.py) and its own modules; every other package may import it.
"""
