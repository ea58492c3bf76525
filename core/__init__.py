"""The bottom layer: chat types, the error tree, cancellation, text and file helpers, images and which settings
are secret.

Owns what every other package shares and nothing that does work of its own. Imports only the standard
library and its own modules; every other package may import it.
"""
