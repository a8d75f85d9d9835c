"""The table of `simroute compare-models`: per candidate, domain and tool, with the
real-vs-real floor beside it."""

from __future__ import annotations

import pytest

from router.reports.model_compare import CallResult, ToolRow, percentile, render, summarize


def result(
    candidate: str,
    tool: str,
    divergence: float,
    *,
    latency: float = 1.0,
    well_formed: bool = True,
    floor=None,
    domain="MCP",
):
    return CallResult(
        candidate=candidate,
        domain=domain,
        channel="mcp" if domain == "MCP" else "shell",
        server="srv",
        tool=tool,
        session="s",
        step=0,
        divergence=divergence,
        well_formed=well_formed,
        latency_s=latency,
        prompt_tokens=100,
        completion_tokens=10,
        floor=floor,
    )


def test_percentile_is_the_nearest_rank():
    values = [float(n) for n in range(1, 21)]  # 1..20
    assert percentile(values, 50) == 10.0 and percentile(values, 95) == 19.0 and percentile(values, 100) == 20.0
    assert percentile([3.0], 95) == 3.0


def test_rows_per_candidate_domain_and_tool_then_totals():
    rows = summarize(
        [
            result("old", "get", 0.5, latency=1.0, floor=0.1),
            result("old", "get", 0.3, latency=3.0, well_formed=False),
            result("old", "put", 1.0, latency=2.0, floor=0.0),
            result("new", "get", 0.1, latency=0.5, floor=0.1),
            result("new", "exec", 0.2, domain="Terminal"),
        ]
    )
    by = {(row.candidate, row.domain, row.tool): row for row in rows}
    get = by["old", "MCP", "srv.get"]
    assert get.calls == 2 and get.mean_divergence == pytest.approx(0.4) and get.well_formed == 0.5
    assert get.latency_p50_s == 1.0 and get.latency_p95_s == 3.0
    assert get.floor == pytest.approx(0.1) and get.floor_pairs == 1  # only the calls that have a real pair
    assert get.prompt_tokens == 100 and get.completion_tokens == 10
    assert by["old", "MCP", "*"].calls == 3 and by["old", "MCP", "*"].floor == pytest.approx(0.05)
    assert by["old", "all", "*"].mean_divergence == pytest.approx(0.6)
    assert by["new", "Terminal", "srv.exec"].floor is None and by["new", "all", "*"].calls == 2
    assert [row.tool for row in rows][:3] == ["srv.get", "srv.put", "srv.get"]  # tools first, in the order seen


def test_the_table_puts_the_candidates_of_a_tool_together():
    rows = summarize([result("old", "get", 0.5, floor=0.25), result("new", "get", 0.125), result("old", "put", 1.0)])
    lines = render(rows).splitlines()
    get = [line for line in lines if "srv.get" in line]
    assert len(get) == 2 and "old" in get[0] and "new" in get[1]
    assert "0.500" in get[0] and "0.250 (1)" in get[0] and "0.125" in get[1] and " - " in get[1] + " "
    assert lines.index(get[1]) == lines.index(get[0]) + 1
    assert "floor" in lines[0] and "p95 s" in lines[0]
    assert ToolRow(**rows[0].as_json()) == rows[0]  # the JSON rows read back (the CLI renders them)
