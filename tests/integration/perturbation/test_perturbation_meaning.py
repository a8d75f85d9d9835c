"""The meaning-level perturbations through `simroute mcp`, launched as a user launches
it, with the OpenAI-compatible model stub for the content: `paginate` over a simulated
listing (following the cursor gets each next page, the last has none) and `mislead`
over a real answer (well-formed for the tool's output schema, not the real answer,
tagged; never replayed and never a world-model example afterwards)."""

from __future__ import annotations

import json

import pytest
from kit.launch import catalog_server, meta_of, records_of, stdio_client, write_config
from kit.mcp import call_tool
from kit.model_stub import ModelStub

pytestmark = pytest.mark.integration

SIMULATED = {"products": [{"name": f"sim lamp {i}", "price": 10.0 + i} for i in range(5)]}
PAGES = {
    "seed": 5,
    "rules": [{"name": "pages", "kind": "paginate", "page_size": 2, "match": {"tool": "list_products"}}],
}
LIES = {
    "seed": 5,
    "rules": [{"name": "lies", "kind": "mislead", "mislead_with": "world_model", "match": {"tool": "get_price"}}],
}
WRONG_PRICE = {"product": "desk lamp", "price": 12.5, "currency": "EUR"}  # the real price is 30.0


def config(folder, model: ModelStub, **sections):
    world_model = {"engine": "openai", "url": model.url, "max_tokens": 256, "deadline_s": 30}
    return write_config(folder, mcpServers={"catalog": catalog_server()}, world_model=world_model, **sections)


async def test_paginate_a_simulated_listing_following_the_cursor_gets_each_next_page_and_the_last_has_none(tmp_path):
    with ModelStub(answer=json.dumps(SIMULATED)) as model:
        path = config(tmp_path, model, mode="sim", perturbations={"apply": "p", "plans": {"p": PAGES}})
        async with stdio_client(path, timeout=120) as client:
            first, _, page = await call_tool(client, "list_products", category="lamps")
            assert not first.is_error and [p["name"] for p in page["products"]] == ["sim lamp 0", "sim lamp 1"]
            assert meta_of(first)["perturbation"] == {
                "kind": "paginate",
                "rule": "p:pages",
                "seed": 5,
                "n": 1,
                "page": 1,
            }
            asked = len(model.bodies)
            pages, cursor = [page], page["next_cursor"]
            while cursor:
                result, _, page = await call_tool(client, "list_products", category="lamps", cursor=cursor)
                assert not result.is_error and meta_of(result)["provenance"] == "none"
                pages.append(page)
                cursor = page.get("next_cursor")
        assert [[p["name"] for p in page["products"]] for page in pages] == [
            ["sim lamp 0", "sim lamp 1"],
            ["sim lamp 2", "sim lamp 3"],
            ["sim lamp 4"],
        ]
        assert len(model.bodies) == asked == 1  # the pages after the first came from session state, not the model
        last_message = model.bodies[0]["messages"][-1]["content"]
        assert "## Perturbation for this action: paginate" in last_message and "in pages of 2 items" in last_message
    rows = records_of(path)
    assert [row["perturbation"].get("page") for row in rows] == [1, 2, 3]
    assert len(rows[0]["unperturbed"]["structured"]["products"]) == 5  # the whole simulated listing, kept


async def test_mislead_is_well_formed_wrong_and_tagged_and_never_replayed_or_an_example(tmp_path):
    with ModelStub(answer=json.dumps(WRONG_PRICE)) as model:
        lying = config(tmp_path, model, mode="real", perturbations={"apply": "p", "plans": {"p": LIES}})
        async with stdio_client(lying, timeout=120) as client:
            misled, _, structured = await call_tool(client, "get_price", product="desk lamp")
        assert (
            not misled.is_error and structured == WRONG_PRICE
        )  # the tool's output schema holds it (the client checks too)
        assert meta_of(misled)["provenance"] == "sim" and meta_of(misled)["perturbation"]["kind"] == "mislead"
        truth = model.bodies[-1]["messages"][-1]["content"].split("must NOT give, is:")[1]
        assert '"price":30.0' in truth.replace(" ", "")  # the real answer was the ground truth
        [row] = records_of(lying)
        assert row["unperturbed"]["provenance"] == "real" and row["unperturbed"]["structured"]["price"] == 30.0
        assert row["observation"]["structured"]["price"] == 12.5 and "mislead" in row["note"]

        replaying = config(tmp_path, model, mode="replay")  # the same store; a miss goes real
        async with stdio_client(replaying, timeout=120) as client:
            again, _, structured = await call_tool(client, "get_price", product="desk lamp")
        assert meta_of(again)["provenance"] == "real" and structured["price"] == 30.0  # not the misled answer

        aligned = config(tmp_path, model, mode="sim")  # the real answer, replayed aligned
        async with stdio_client(aligned, timeout=120) as client:
            simulated, _, structured = await call_tool(client, "get_price", product="desk lamp")
        assert (
            meta_of(simulated)["source"]["sub"] == "replay-aligned" and structured["price"] == 30.0
        )  # never the misled one

        simulating = config(tmp_path, model, mode="sim", world_state={"mcp_alignment": False})  # the model asked
        asked = len(model.bodies)
        async with stdio_client(simulating, timeout=120) as client:
            await call_tool(client, "get_price", product="desk lamp")
        prompt = json.dumps(model.bodies[asked:])
        assert "30.0" in prompt and "12.5" not in prompt  # the real answer is an example; the misled one never


async def test_mislead_by_default_is_a_seeded_mutation_two_seeds_two_wrong_prices_without_a_world_model(tmp_path):
    prices = []
    for seed in (7, 8):
        plan = {"seed": seed, "rules": [{"name": "lies", "kind": "mislead", "match": {"tool": "get_price"}}]}
        (folder := tmp_path / str(seed)).mkdir()
        path = write_config(
            folder, mcpServers={"catalog": catalog_server()}, perturbations={"apply": "p", "plans": {"p": plan}}
        )
        async with stdio_client(path, timeout=120) as client:
            misled, _, structured = await call_tool(client, "get_price", product="desk lamp")
        assert (
            not misled.is_error and meta_of(misled)["provenance"] == "none"
        )  # the tool's output schema holds it (the client checks)
        assert structured["product"] == "desk lamp" and structured["currency"] == "EUR"
        assert isinstance(structured["price"], float) and 0.05 <= abs(structured["price"] - 30.0) / 30.0 <= 0.5
        [row] = records_of(path)
        assert row["unperturbed"]["structured"]["price"] == 30.0 and row["perturbation"]["seed"] == seed
        prices.append(structured["price"])
    assert prices[0] != prices[1]
