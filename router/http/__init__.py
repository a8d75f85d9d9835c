"""The HTTP(S) channel: a mitmproxy addon routing every request through the engine."""
