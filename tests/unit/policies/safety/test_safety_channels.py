"""The MCP, HTTP and browser classifiers, and the settings that steer them."""

from __future__ import annotations

from kit.calls import make_call

from calls import Call, Observation, Provenance, Session, Turn
from policies.safety import SafetyClassifier, SafetySettings, classify
from policies.safety.browser import element_context
from policies.safety.verdict import SafetyClass


def mcp(tool, server="srv", **arguments):
    return make_call(tool, arguments, server=server)


def http(method, url_path, host="api.example.com", body=None):
    return Call(
        "http",
        host,
        method,
        {
            "method": method,
            "url": f"https://{host}{url_path}",
            "path": url_path,
            "query": {},
            "headers": {},
            "body": body,
        },
        "s",
    )


TOOLS = {
    ("srv", "get_weather"): {"name": "get_weather", "annotations": {"destructiveHint": True, "readOnlyHint": False}},
    ("srv", "wipe_thing"): {"name": "wipe_thing", "annotations": {"readOnlyHint": True}},
    ("srv", "frobnicate"): {
        "name": "frobnicate",
        "description": "Permanently erases the archive. This cannot be undone.",
    },
    ("srv", "lookup"): {"name": "lookup", "description": "Looks up a record and deletes stale copies"},
    ("trusted", "wipe_thing"): {"name": "wipe_thing", "annotations": {"readOnlyHint": True}},
    ("trusted", "delete_note"): {
        "name": "delete_note",
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    },
}


def lookup(server, tool):
    return TOOLS.get((server, tool))


def test_mcp_names_annotations_and_descriptions():
    settings = SafetySettings(trusted_servers=("trusted",))
    c = SafetyClassifier(settings, lookup)
    assert c.classify(mcp("get_current_time")).cls is SafetyClass.SAFE
    assert c.classify(mcp("delete_repo")).cls is SafetyClass.DESTRUCTIVE
    assert c.classify(mcp("sendMessage")).cls is SafetyClass.SIDE_EFFECT  # camelCase words
    assert c.classify(mcp("frob")).cls is SafetyClass.SIDE_EFFECT  # unknown effect: not safe
    # an untrusted server's annotations only ever make a call less safe
    assert c.classify(mcp("get_weather")).cls is SafetyClass.DESTRUCTIVE
    assert c.classify(mcp("wipe_thing")).cls is SafetyClass.DESTRUCTIVE
    # descriptions: destruction, or a write behind a read-sounding name
    assert c.classify(mcp("frobnicate")).cls is SafetyClass.DESTRUCTIVE
    assert c.classify(mcp("lookup")).cls is SafetyClass.SIDE_EFFECT
    # a trusted server is believed both ways
    assert c.classify(mcp("wipe_thing", server="trusted")).cls is SafetyClass.SAFE
    assert c.classify(mcp("delete_note", server="trusted")).cls is SafetyClass.SIDE_EFFECT


HINTED = {
    "search_web": {"readOnlyHint": True, "openWorldHint": True},  # reads the open world
    "get_forecast": {"openWorldHint": True},  # a read-sounding name, not annotated read-only
    "get_next_ticket": {"idempotentHint": False},  # each call takes a ticket
    "get_status": {"readOnlyHint": True, "idempotentHint": False},  # contradictory: the worse hint counts
    "remember": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False},
    "drop_cache": {"idempotentHint": True, "openWorldHint": False},  # neither lowers the name's class
    "post_update": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True, "idempotentHint": False},
}


def hinted(server, tool):
    return {"name": tool, "annotations": HINTED[tool]} if tool in HINTED else None


def test_open_world_and_idempotence_hints_only_make_a_call_less_safe():
    c = SafetyClassifier(SafetySettings(trusted_servers=("trusted",)), hinted)
    assert c.classify(mcp("search_web")).cls is SafetyClass.SAFE
    forecast = c.classify(mcp("get_forecast"))
    assert forecast.cls is SafetyClass.SIDE_EFFECT and "openWorldHint" in forecast.reason
    ticket = c.classify(mcp("get_next_ticket"))
    assert ticket.cls is SafetyClass.SIDE_EFFECT and "idempotentHint false" in ticket.reason
    assert c.classify(mcp("get_status")).cls is SafetyClass.SIDE_EFFECT
    # the hints that would make a call safer are not believed from an untrusted server
    assert c.classify(mcp("drop_cache")).cls is SafetyClass.DESTRUCTIVE
    # and a trusted server's own readOnlyHint / destructiveHint decide
    assert c.classify(mcp("get_status", server="trusted")).cls is SafetyClass.SAFE
    assert c.classify(mcp("remember", server="trusted")).cls is SafetyClass.SIDE_EFFECT
    # Only hints that say nothing of writing.
    assert c.classify(mcp("drop_cache", server="trusted")).cls is SafetyClass.DESTRUCTIVE
    # an open-world, repeatable write is a side effect, not destructive: destructiveHint would say so
    assert c.classify(mcp("post_update")).cls is SafetyClass.SIDE_EFFECT
    assert c.classify(mcp("post_update", server="trusted")).cls is SafetyClass.SIDE_EFFECT


def test_overrides_per_server_and_tool_have_the_last_word():
    settings = SafetySettings(
        tools=(("srv", "delete_*", SafetyClass.SIDE_EFFECT), ("shell", "shell_exec", SafetyClass.DESTRUCTIVE))
    )
    c = SafetyClassifier(settings, lookup)
    verdict = c.classify(mcp("delete_draft"))
    assert verdict.cls is SafetyClass.SIDE_EFFECT and "safety.tools" in verdict.reason
    assert c.classify(make_call("shell_exec", {"command": "ls"}, channel="shell")).cls is SafetyClass.DESTRUCTIVE


def test_http_methods_paths_hosts_and_graphql():
    assert classify(http("GET", "/v1/charges")).cls is SafetyClass.SAFE
    assert classify(http("POST", "/v1/items")).cls is SafetyClass.SIDE_EFFECT
    assert classify(http("DELETE", "/v1/items/3")).cls is SafetyClass.DESTRUCTIVE
    assert classify(http("POST", "/v1/charges")).cls is SafetyClass.DESTRUCTIVE
    assert classify(http("POST", "/v3/mail/send", host="api.sendgrid.com")).cls is SafetyClass.DESTRUCTIVE
    assert classify(http("POST", "/graphql", body={"query": "query { me { id } }"})).cls is SafetyClass.SAFE
    assert (
        classify(http("POST", "/graphql", body={"query": "mutation { renameUser(id: 1) { id } }"})).cls
        is SafetyClass.SIDE_EFFECT
    )
    assert (
        classify(http("POST", "/graphql", body={"query": "mutation Del { deleteUser(id: 1) { id } }"})).cls
        is SafetyClass.DESTRUCTIVE
    )
    # A model API, not mail.
    assert classify(http("POST", "/v1/messages", host="api.anthropic.com")).cls is SafetyClass.SIDE_EFFECT
    assert classify(http("POST", "/v1/send_email")).cls is SafetyClass.DESTRUCTIVE
    production = SafetySettings(production_hosts=("example.com",), http_safe_methods=frozenset({"GET"}))
    verdict = classify(http("POST", "/v1/items", host="api.example.com:8443"), settings=production)
    assert verdict.cls is SafetyClass.DESTRUCTIVE and "production" in verdict.reason
    # HEAD not configured safe.
    assert classify(http("HEAD", "/", host="other.org"), settings=production).cls is SafetyClass.SIDE_EFFECT


SNAPSHOT = """- main:
  - link "Home" [ref=e1]
  - form "Close your account":
    - textbox "Password" [ref=e2]
    - button "Continue" [ref=e3]
  - button "Show more" [ref=e4]
"""


def browser_session(url="https://bank.example.com/settings"):
    session = Session("s")
    observation = Observation(
        [{"type": "text", "text": "page"}], Provenance.REAL, structured={"url": url, "title": "t", "snapshot": SNAPSHOT}
    )
    session.history.append(Turn(make_call("browser_navigate", {"url": url}, channel="browser"), observation))
    return session


def test_browser_elements_are_named_from_the_page_the_agent_saw():
    assert element_context(SNAPSHOT, "e3") == ("button", "Continue", ["Close your account"])
    plain = SafetyClassifier()
    session = browser_session()
    click = lambda ref: make_call("browser_click", {"ref": ref}, channel="browser")  # noqa: E731
    assert plain.classify(click("e1"), session).cls is SafetyClass.SAFE
    assert plain.classify(click("e4"), session).cls is SafetyClass.SAFE
    order_history = make_call("browser_click", {"ref": "e9", "element": "Order history link"}, channel="browser")
    assert plain.classify(order_history, session).cls is SafetyClass.SAFE
    verdict = plain.classify(click("e3"), session)  # "Continue", in a form that closes the account
    assert verdict.cls is SafetyClass.SIDE_EFFECT and "close" in verdict.reason.lower()
    typing = make_call("browser_type", {"ref": "e2", "text": "hunter2"}, channel="browser")
    assert plain.classify(typing, session).cls is SafetyClass.SIDE_EFFECT
    sensitive = SafetyClassifier(SafetySettings(sensitive_domains=("example.com",)))
    verdict = sensitive.classify(click("e3"), session)
    assert verdict.cls is SafetyClass.DESTRUCTIVE and "bank.example.com" in verdict.reason
    assert sensitive.classify(typing, session).cls is SafetyClass.DESTRUCTIVE
    assert sensitive.classify(click("e1"), session).cls is SafetyClass.SAFE
    assert (
        sensitive.classify(
            make_call("browser_navigate", {"url": "https://bank.example.com/"}, channel="browser"), session
        ).cls
        is SafetyClass.SAFE
    )


def test_an_mcp_verdict_is_kept_until_the_tools_definition_changes():
    definitions = {"annotations": {"readOnlyHint": True}}
    classifier = SafetyClassifier(SafetySettings(trusted_servers=("notes",)), lambda server, tool: definitions)
    call = make_call("tidy", server="notes")
    first = classifier.classify(call)
    assert first.cls is SafetyClass.SAFE and classifier.classify(call) is first  # the same definition: the same verdict
    definitions = {"annotations": {"readOnlyHint": False, "destructiveHint": True}}  # a new listing
    assert classifier.classify(call).cls is SafetyClass.DESTRUCTIVE
