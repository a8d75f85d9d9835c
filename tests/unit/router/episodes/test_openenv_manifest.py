"""openenv.yaml, the manifest OpenEnv's tools read at the repository's root: the
fields of openenv-core's own template, and values that name what serves simroute's
episodes (`simroute serve`, on its default port)."""

from __future__ import annotations

import importlib.resources
import inspect
import tomllib
from pathlib import Path

import yaml
from openenv.core.containers.runtime.daytona_provider import DaytonaProvider
from typer.testing import CliRunner

from router.cli.common import parse_host_port
from router.cli.main import app as cli
from router.cli.serving import serve

REPO = Path(__file__).resolve().parents[4]
MANIFEST = REPO / "openenv.yaml"
# What `openenv init` writes: the fields an OpenEnv environment's manifest has.
TEMPLATE = importlib.resources.files("openenv.cli.templates") / "openenv_env" / "openenv.yaml"


def manifest() -> dict:
    return yaml.safe_load(MANIFEST.read_text())


def test_the_manifest_has_the_fields_of_openenvs_template_and_their_types():
    template, ours = yaml.safe_load(TEMPLATE.read_text()), manifest()
    assert set(template) <= set(ours)
    assert {field: type(ours[field]) for field in template} == {field: type(value) for field, value in template.items()}
    assert ours["spec_version"] == template["spec_version"]  # the manifest format openenv-core reads


def test_openenv_reads_the_name_description_and_app():
    ours = manifest()
    # `openenv push` refuses a manifest without a name; environment discovery shows the description.
    assert ours["name"] == "simroute"
    assert isinstance(ours["description"], str) and ours["description"]
    # How openenv-core's runners find what serves the environment.
    assert DaytonaProvider._parse_app_field(MANIFEST.read_text()) == ours["app"] == "simroute serve"


def test_app_is_simroutes_serving_command_and_port_its_default():
    program, *arguments = manifest()["app"].split()
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert program in scripts  # the console script the package installs
    shown = CliRunner().invoke(cli, [*arguments, "--help"])
    assert shown.exit_code == 0 and "--mcp" in shown.output  # the command serving MCP, /ws and /episodes
    default_address = inspect.signature(serve).parameters["mcp_address"].default
    assert parse_host_port(default_address)[1] == manifest()["port"]
