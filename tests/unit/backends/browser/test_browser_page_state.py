"""The text form of a page, shared by the real browser and the Web world model."""

from backends.browser.page_state import (
    NO_PAGE,
    PageState,
    host_allowed,
    normalize_url,
    parse_page_text,
    refs_in,
    trim_snapshot,
    unknown_ref_message,
)

SNAPSHOT = (
    '- generic [ref=e1]:\n  - heading "Hi" [level=1] [ref=e2]\n  - link "Next" [ref=f1e3] [cursor=pointer]:\n    - '
    "/url: /next"
)


def test_text_round_trips_through_the_parser():
    state = PageState("http://a.test/", "Hi", SNAPSHOT, events=["a JavaScript alert dialog said 'x'; it was dismissed"])
    text = state.text()
    assert text.endswith(
        "- Page URL: http://a.test/\n- Page Title: Hi\n- Page Snapshot:\n```yaml\n" + SNAPSHOT + "\n```"
    )
    parsed = parse_page_text(text)
    assert (parsed.url, parsed.title, parsed.snapshot, parsed.events) == (
        state.url,
        state.title,
        state.snapshot,
        state.events,
    )
    error = PageState("http://a.test/x", "", "", error="Navigation to http://a.test/x failed: net::ERR_FAILED")
    assert parse_page_text(error.text()).error == error.error


def test_lenient_parsing_keeps_what_it_can():
    previous = PageState("http://a.test/", "Hi", SNAPSHOT)
    # Only a snapshot: URL and title stay from the previous page.
    bare = parse_page_text('- heading "Next page" [ref=e5]', previous=previous)
    assert (bare.url, bare.title, bare.snapshot) == ("http://a.test/", "Hi", '- heading "Next page" [ref=e5]')
    # A header but an unclosed fence (the model ran out of tokens).
    cut = parse_page_text("- Page URL: http://a.test/n\n- Page Title: N\n- Page Snapshot:\n```yaml\n- text: partial")
    assert (cut.url, cut.title, cut.snapshot) == ("http://a.test/n", "N", "- text: partial")
    # Nothing known at all.
    unknown = parse_page_text("gibberish")
    assert unknown.url is None and unknown.snapshot == "gibberish"
    assert parse_page_text(PageState(None, None, None).text()).snapshot is None
    assert PageState(None, None, None).text() == NO_PAGE


def test_trimming_cuts_at_a_line_with_a_marker():
    snapshot = "\n".join(f"- listitem [ref=e{i}]: Item {i}" for i in range(1000))
    trimmed, cut = trim_snapshot(snapshot, 500)
    assert cut and len(trimmed.splitlines()[-1]) < 100 and "snapshot trimmed" in trimmed.splitlines()[-1]
    assert all(line.startswith("- listitem") for line in trimmed.splitlines()[:-1])
    assert trim_snapshot("short", 500) == ("short", False)


def test_refs_urls_and_allowlist():
    assert refs_in(SNAPSHOT) == {"e1", "e2", "f1e3"}
    assert "e99" in unknown_ref_message("e99")
    assert normalize_url("example.com") == "https://example.com"
    assert normalize_url("localhost:8000/x") == "http://localhost:8000/x"
    assert normalize_url("about:blank") == "about:blank"
    assert host_allowed("http://a.test/", None)
    assert host_allowed("https://www.example.com/x", ["example.com"])
    assert not host_allowed("https://example.com.evil.test/", ["example.com"])
    assert host_allowed("https://api.example.com/", ["*.example.com"]) and not host_allowed(
        "https://example.com/", ["*.example.com"]
    )
    assert host_allowed("data:text/html,hi", ["example.com"]) and not host_allowed(
        "file:///etc/passwd", ["example.com"]
    )


def test_parsing_what_a_small_model_writes():
    text = (
        '- pageURL: http://a.test/about\n- pageTitle: About\n- pageSnapshot:\n```json\n{"title": "About '
        'us"}\n```\n\nThink about it.'
    )
    page = parse_page_text(text)
    assert (page.url, page.title, page.snapshot) == ("http://a.test/about", "About", '{"title": "About us"}')
    empty_title = parse_page_text(
        "- Page URL: http://a.test/\n- Page Title:\n- Page Snapshot:\n```yaml\n- text: hi\n```"
    )
    assert (empty_title.url, empty_title.title, empty_title.snapshot) == ("http://a.test/", "", "- text: hi")


def test_textbox_refs_are_the_text_boxes_of_a_snapshot_in_order():
    from backends.browser.page_state import textbox_refs

    snapshot = (
        '- heading "Vault" [ref=e1]\n- textbox "Access phrase" [ref=e2]\n  - textbox [ref=f1e7]: typed\n- button '
        '"Go" [ref=e3]'
    )
    assert textbox_refs(snapshot) == ["e2", "f1e7"]
    assert textbox_refs(snapshot, limit=1) == ["e2"] and textbox_refs(None) == []
