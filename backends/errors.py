"""Errors backends raise across the boundary to the front doors."""

from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """A real backend cannot run on this machine or right now (no Docker engine,
    no Chromium). The message names what is missing and how to get it; the
    simulated route keeps working."""
