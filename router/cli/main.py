"""The `simroute` command line: the typer app and its commands, each group in its own
module (serving.py, records.py, maintenance.py, setup.py, explain.py, learned.py,
shadow.py, demo.py, export.py, pins.py, judge.py, virtualize.py, compare_models.py, tune.py)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

# fastmcp's rich tracebacks render every frame's locals: seconds per error on a
# busy router (and they block the event loop). Plain logging, set before fastmcp loads.
os.environ.setdefault("FASTMCP_ENABLE_RICH_LOGGING", "false")
os.environ.setdefault("FASTMCP_ENABLE_RICH_TRACEBACKS", "false")

import typer

from router.cli.compare_models import compare_models
from router.cli.explain import explain
from router.cli.export import export
from router.cli.judge import judge
from router.cli.learned import evaluate, reload, train
from router.cli.maintenance import drain, prune, worker
from router.cli.pins import pins_app
from router.cli.records import recordings, records, tag_recording
from router.cli.serving import dashboard, http_proxy, mcp, serve
from router.cli.setup import ca, check_config
from router.cli.shadow import diff, noise
from router.cli.tune import tune
from router.cli.virtualize import virtualize

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="simroute: route an agent's tool calls to real or simulated environments.",
)


def demo(
    workdir: Annotated[Path, typer.Option(help="Where the demo writes its config and records.")] = Path(
        ".simroute-demo"
    ),
) -> None:
    """Run simroute in front of a real MCP server, a shell sandbox and a web API: real,
    replayed, simulated, shadowed and denied calls."""
    from router.cli.demo import run_demo

    raise typer.Exit(asyncio.run(run_demo(workdir)))


for command in (mcp, serve, dashboard, records, recordings, drain, prune, worker):
    app.command()(command)
app.command("http-proxy")(http_proxy)
app.command("tag-recording")(tag_recording)
app.command()(ca)
app.command("check-config")(check_config)
app.command()(explain)
app.command()(export)
app.command()(judge)
app.command("compare-models")(compare_models)
app.command()(tune)
app.command()(demo)
for learned_command in (noise, diff, train):
    app.command()(learned_command)
app.command("eval")(evaluate)
app.command()(reload)
app.add_typer(pins_app, name="pins")
app.command()(virtualize)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
