"""Replay across repositories, on the project's own git-style server: three real
sessions each work in their own repository (contents differ). In a fresh session in
a new repository, `workspace_info` (which only echoes the path) replays the
recording made for another repository with the path substituted, while `summary`
(which echoes the path but counts the contents) and `list_files` go real."""

from __future__ import annotations

import pytest
from kit.launch import meta_of, write_config
from kit.workload import World, run_session, session_records, sessions_of

pytestmark = pytest.mark.integration

TOOLS = ("workspace_info", "summary", "list_files")  # one upstream: its own tool names


async def test_a_tool_that_echoes_the_path_replays_across_repositories_and_one_that_reads_the_contents_does_not(
    tmp_path,
):
    world = World(tmp_path / "world", "http://127.0.0.1:9/unused")
    sections = {"mcpServers": world.servers("repo"), "store": {"path": ".simroute/records.db"}}
    real = write_config(tmp_path, mode="real", **sections)
    for n in range(3):
        repository = world.repository(
            f"learning-{n}", {"README.md": "# project\n" + "x" * (10 * n), **{f"f{i}.py": "" for i in range(n)}}
        )
        await run_session(real, [(tool, {"path": str(repository)}) for tool in TOOLS])
    fresh = world.repository(
        "fresh", {"README.md": "# another project with other contents\n", "setup.py": "print(1)\n"}
    )
    learned = write_config(tmp_path, mode="learned", learned={"explore_rate": 0, "freeze": True}, **sections)
    answers = dict(
        zip(TOOLS, await run_session(learned, [(tool, {"path": str(fresh)}) for tool in TOOLS]), strict=True)
    )

    info = answers["workspace_info"]
    assert meta_of(info)["provenance"] == "replay", meta_of(info)
    assert (
        info.content[0].text == f"workspace {fresh}: layout v2, default branch main, hooks none"
    )  # the new path, substituted
    for tool in ("summary", "list_files"):
        assert meta_of(answers[tool])["provenance"] == "real", (tool, meta_of(answers[tool]))
    assert answers["summary"].content[0].text == f"workspace {fresh}: 2 files, {38 + 9} bytes"
    records = {r["tool"]: r for r in session_records(learned, sessions_of(learned)[-1])}
    assert (
        "made for path" in records["workspace_info"]["note"]
        and "the value substituted" in records["workspace_info"]["note"]
    )
    assert "recorded for another 'path'" in records["workspace_info"]["reason"]
