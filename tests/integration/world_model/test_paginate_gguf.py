"""`paginate` over a listing the bundled GGUF world model simulates, for the shape:
the model gives the listing (grounded in a recorded real one), simroute serves it in
pages of the tool's output schema, and following each cursor gets the next page of
the same listing until a last page with none."""

from __future__ import annotations

import pytest
from kit.launch import catalog_server, meta_of, model_path, records_of, stdio_client
from kit.mcp import call_tool

# The bundled GGUF model runs in this test, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

PAGES = {
    "seed": 1,
    "rules": [{"name": "pages", "kind": "paginate", "page_size": 2, "match": {"tool": "list_products"}}],
}


async def test_a_simulated_listing_is_served_in_pages_that_follow_each_other(make_config):
    world_model = {"model_path": str(model_path()), "max_tokens": 256, "deadline_s": 120}
    recording = make_config(mcpServers={"catalog": catalog_server()}, world_model=world_model, mode="real")
    async with stdio_client(recording, timeout=180) as client:  # a real listing: the model's example
        await call_tool(client, "list_products", category="lamps")
    simulated = make_config(
        mcpServers={"catalog": catalog_server()},
        world_model=world_model,
        mode="sim",
        perturbations={"apply": "p", "plans": {"p": PAGES}},
    )
    async with stdio_client(simulated, timeout=180) as client:
        first, _, page = await call_tool(client, "list_products", category="lamps")
        assert not first.is_error and meta_of(first)["perturbation"]["kind"] == "paginate", first.content[0].text
        pages, cursor = [page], page.get("next_cursor")
        assert cursor, page  # the simulated listing held more than a page
        while cursor:
            result, _, page = await call_tool(client, "list_products", category="lamps", cursor=cursor)
            assert not result.is_error and meta_of(result)["perturbation"]["page"] == len(pages) + 1
            pages.append(page)
            cursor = page.get("next_cursor")
    assert all(
        1 <= len(page["products"]) <= 2 and all(set(p) == {"name", "price"} for p in page["products"]) for page in pages
    )
    assert all(page.get("next_cursor") for page in pages[:-1]) and not pages[-1].get("next_cursor")
    [listing] = [row["unperturbed"] for row in records_of(simulated) if row.get("perturbation", {}).get("page") == 1]
    assert listing["provenance"] == "sim"
    assert [p for page in pages for p in page["products"]] == listing["structured"][
        "products"
    ]  # consistent: no gap, no overlap
