"""The one way the shell state says "I cannot answer this"."""

from __future__ import annotations


class Unanswerable(Exception):
    """The state cannot answer a command line: an unknown program, option or syntax, a
    read of content the state does not hold, a directory whose listing is not known.
    The executor then changes nothing and its caller asks the world model."""
