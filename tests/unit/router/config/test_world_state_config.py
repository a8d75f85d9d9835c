"""The world_state section's off switch: a channel, an MCP server or an HTTP API."""

import pytest
from pydantic import ValidationError

from router.config.world_state import WorldStateConfig


def test_the_off_switch_takes_the_http_channel_or_one_api():
    one_api = WorldStateConfig(exclude=["http/api.test:8443"])
    assert (
        not one_api.on_for("http", "api.test:8443")
        and one_api.on_for("http", "api.test")
        and one_api.on_for("shell", "shell")
    )
    assert not WorldStateConfig(exclude=["http"]).on_for("http", "api.test")
    with pytest.raises(ValidationError):
        WorldStateConfig(exclude=["smtp/mail.test"])
