"""Paginated listings: pages of the route's listing in its own shape, each but the
last with a cursor that `next_cursor` reads back, the same cursors for the same seed."""

import json

from calls import Call, Observation, Perturbation, Provenance
from router.addons.perturbation.pages import CURSOR_FIELD, cursor_in, listing_of, next_cursor, pages_of

PAGINATE = Perturbation(kind="paginate", rule="p:pages", seed=7, n=1, page_size=2)
MCP = Call("mcp", "shop", "list_products", {"category": "lamps"}, "s")


def structured_listing(count: int) -> Observation:
    value = {"products": [{"name": f"p{i}"} for i in range(count)], "total": count}
    return Observation([{"type": "text", "text": json.dumps(value)}], Provenance.REAL, structured=value)


def test_a_structured_listing_is_cut_into_pages_each_with_the_cursor_of_the_next():
    pages = pages_of(MCP, structured_listing(5), PAGINATE, "")
    assert [[p["name"] for p in page.structured["products"]] for page in pages] == [["p0", "p1"], ["p2", "p3"], ["p4"]]
    assert all(page.structured["total"] == 5 and page.provenance is Provenance.NONE for page in pages)
    cursors = [next_cursor(page) for page in pages]
    assert cursors[0] and cursors[1] and cursors[0] != cursors[1] and cursors[2] is None
    assert json.loads(pages[0].text)[CURSOR_FIELD] == cursors[0]
    assert cursors == [next_cursor(page) for page in pages_of(MCP, structured_listing(5), PAGINATE, "")]  # seeded
    assert cursors != [next_cursor(page) for page in pages_of(MCP, structured_listing(5), PAGINATE, "other session")]


def test_a_json_list_keeps_valid_json_and_carries_its_cursor_in_a_second_block():
    listing = Observation([{"type": "text", "text": json.dumps(list(range(3)))}], Provenance.SIM)
    first, last = pages_of(MCP, listing, PAGINATE, "")
    assert json.loads(first.content[0]["text"]) == [0, 1] and first.content[1]["text"].startswith("next_cursor: cur_")
    assert json.loads(last.text) == [2] and next_cursor(last) is None


def test_one_page_or_no_listing_is_not_paginated():
    assert pages_of(MCP, structured_listing(2), PAGINATE, "") is None
    assert listing_of(MCP, Observation([{"type": "text", "text": "just one line"}], Provenance.REAL)) is None
    assert listing_of(MCP, Observation.error("a\nb\nc")) is None


def test_an_http_list_body_gets_a_link_header_with_the_cursor():
    call = Call("http", "api.test", "GET", {"url": "http://api.test/items?page_size=9", "query": {}}, "s")
    body = json.dumps([1, 2, 3])
    structured = {
        "status": 200,
        "reason": "OK",
        "headers": [["Content-Type", "application/json"]],
        "body": body,
        "body_encoding": "text",
    }
    first, last = pages_of(call, Observation([], Provenance.REAL, structured=structured), PAGINATE, "")
    link = dict(first.structured["headers"])["Link"]
    assert link.startswith("<http://api.test/items?page_size=9&cursor=cur_") and link.endswith('>; rel="next"')
    assert json.loads(first.structured["body"]) == [1, 2] and next_cursor(first) == link.split("cursor=")[1][:20]
    assert "Link" not in dict(last.structured["headers"]) and next_cursor(last) is None
    follow = Call("http", "api.test", "GET", {"url": "x", "query": {"cursor": next_cursor(first)}}, "s")
    assert cursor_in(follow) == next_cursor(first)


def test_only_a_cursor_simroute_issued_is_read_from_the_arguments():
    assert cursor_in(Call("mcp", "s", "t", {"cursor": "abc"}, "s")) is None
    assert cursor_in(Call("mcp", "s", "t", {"cursor": "cur_0123456789abcdef"}, "s")) == "cur_0123456789abcdef"
