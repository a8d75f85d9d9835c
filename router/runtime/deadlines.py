"""Each call's outer deadlines: the real side's by channel, the simulated side's by
server. Every backend call runs under one (the engine's `Deadlines`)."""

from __future__ import annotations

from calls import Call
from router.config import Config


def real_deadline_for(config: Config, call: Call) -> float:
    """The outer deadline of a call's real side (each channel's own deadlines answer first)."""
    if call.channel == "shell":
        # The command's own deadline answers first (with partial output); this
        # outer one leaves room to open a sandbox and only stops a stuck engine.
        return config.shell.command_timeout(call.arguments.get("timeout_s")) + 60.0
    if call.channel == "browser":
        # The browser's own deadlines answer first, with the page as far as it got;
        # this one leaves room to launch Chromium.
        browser = config.browser
        return browser.navigation_timeout_s + 2 * browser.action_timeout_s + 60.0
    if call.channel == "http":
        return config.http.timeout_s
    return config.timeout_for(call.server)


def sim_deadline_for(config: Config, call: Call) -> float:
    """The simulated side's deadline for a call of `call.server`."""
    return config.sim_timeout_for(call.server)
