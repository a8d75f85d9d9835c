"""Browser tests run against both isolation modes: Chromium on the host and in its
container (browser.isolation), so each behaviour is shown the same in both.

A test module imports both fixtures: `from kit.browser import isolation, make_config`."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["host", "container"])
def isolation(request):
    return request.param


@pytest.fixture
def make_config(make_config, isolation, request):
    """The module's configs (its CONFIG_DEFAULTS' browser section unless a test gives
    one), with the browser isolation under test."""
    defaults = getattr(request.module, "CONFIG_DEFAULTS", {}).get("browser", {})

    def make(**sections):
        browser = sections.get("browser", defaults)
        return make_config(**{**sections, "browser": {"isolation": isolation, **browser}})

    return make
