"""The Web domain: browser tool calls as actions, pages with refs as observations,
refusals where the real browser fails, and lenient parsing of predictions."""

import json

from backends.browser.page_state import PageState
from backends.world_model.web_domain import WebDomain
from calls import Call, Observation, Provenance, Session, Turn

HOME = (
    '- generic [ref=e1]:\n  - heading "Welcome home" [level=1] [ref=e2]\n  - link "About us" [ref=e3] '
    "[cursor=pointer]:\n    - /url: /about"
)
ABOUT = '- heading "About us" [level=1] [ref=f1e2]\n- paragraph [ref=f1e3]: We make widgets since 1999.'


def browser(tool, session="s", **arguments):
    return Call("browser", "browser", tool, arguments, session)


def real_turn(call, page: PageState):
    return Turn(
        call, Observation([{"type": "text", "text": page.text()}], Provenance.REAL, structured=page.structured())
    )


def count(text):
    return len(text) // 4


def home_session():
    return Session(
        "s",
        history=[
            real_turn(
                browser("browser_navigate", url="http://site.test/"), PageState("http://site.test/", "Home", HOME)
            ),
            Turn(
                Call("mcp", "time", "now", {}, "s"),
                Observation([{"type": "text", "text": "elsewhere"}], Provenance.REAL),
            ),
        ],
    )


def test_messages_carry_actions_and_pages_in_the_trained_layout():
    domain = WebDomain(initial_state="A widget shop at http://site.test/.", simulation_instruction="Pages load fast.")
    messages = domain.messages(
        browser("browser_click", ref="e3", element="About us"), home_session(), budget_tokens=10_000, count_tokens=count
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    system = messages[0]["content"]
    assert (
        "web browser" in system
        and "browser_click" in system
        and "A widget shop" in system
        and "Pages load fast." in system
    )
    first = messages[1]["content"]
    assert first.startswith("### Turn 1\n**Current State:**\nA widget shop") and '"name": "browser_navigate"' in first
    assert messages[2]["content"].startswith(
        "**Environment Observation:**\n- Page URL: http://site.test/\n- Page Title: Home\n- Page Snapshot:\n```yaml\n"
    )
    last = messages[3]["content"]
    assert last.startswith("### Turn 2\n**Action:**") and "Current State" not in last
    assert json.loads(last.split("```json\n")[1].split("\n```")[0]) == {
        "name": "browser_click",
        "arguments": {"ref": "e3", "element": "About us"},
    }
    assert "<predicted_observation>" in last and "elsewhere" not in json.dumps(messages)


def test_refusals_match_the_real_browser():
    domain = WebDomain(allowed_domains=["site.test"])
    empty = Session("s")
    assert "No open pages available" in domain.refusal(browser("browser_snapshot"), empty)
    assert "No open pages available" in domain.refusal(browser("browser_click", ref="e1"), empty)
    assert domain.refusal(browser("browser_navigate", url="http://site.test/"), empty) is None
    assert "blocked" in domain.refusal(browser("browser_navigate", url="https://elsewhere.test/"), empty)
    session = home_session()
    assert domain.refusal(browser("browser_click", ref="e3"), session) is None
    unknown = domain.refusal(browser("browser_type", ref="e99", text="x"), session)
    assert unknown == "### Error\nRef e99 not found in the current page snapshot. Try capturing new snapshot."
    # After browser_close no page is open.
    session.history.append(real_turn(browser("browser_close"), PageState(None, None, None)))
    assert "No open pages available" in domain.refusal(browser("browser_press_key", key="Enter"), session)


def test_a_prediction_becomes_a_page_of_the_real_shape():
    domain = WebDomain(snapshot_max_chars=200)
    session = home_session()
    click = browser("browser_click", ref="e3")
    assert domain.refusal(click, session) is None  # remembers the page the action applies to
    full = domain.observation(
        click, "- Page URL: http://site.test/about\n- Page Title: About\n- Page Snapshot:\n```yaml\n" + ABOUT + "\n```"
    )
    assert full.structured == {"url": "http://site.test/about", "title": "About", "snapshot": ABOUT, "truncated": False}
    assert full.text == PageState("http://site.test/about", "About", ABOUT).text() and not full.is_error
    # Only snapshot text: the URL and title stay those of the page acted on.
    domain.refusal(click, session)
    bare = domain.observation(click, ABOUT)
    assert (bare.structured["url"], bare.structured["title"], bare.structured["snapshot"]) == (
        "http://site.test/",
        "Home",
        ABOUT,
    )
    # A navigation keeps its target URL when the model does not say.
    nav = domain.observation(browser("browser_navigate", url="site.test/x"), '- heading "X" [ref=e2]')
    assert nav.structured["url"] == "https://site.test/x"
    # Long predictions are trimmed like real snapshots; close always closes.
    long = domain.observation(click, "\n".join(f"- listitem [ref=e{i}]: Item {i}" for i in range(100)))
    assert long.structured["truncated"] and "snapshot trimmed" in long.text
    assert (
        domain.observation(browser("browser_close"), "whatever").text
        == "No open tabs. Navigate to a URL to create one."
    )


def test_old_turns_and_big_pages_fit_the_budget():
    domain = WebDomain()
    big = "\n".join(f"- listitem [ref=e{i}]: Item number {i}" for i in range(3000))
    history = [
        real_turn(
            browser("browser_navigate", url=f"http://site.test/{i}"), PageState(f"http://site.test/{i}", f"P{i}", big)
        )
        for i in range(12)
    ]
    messages = domain.messages(
        browser("browser_snapshot"), Session("s", history=history), budget_tokens=3000, count_tokens=count
    )
    assert sum(count(m["content"]) + 8 for m in messages) <= 3000
    assert "earlier turns omitted" in json.dumps(messages) and "http://site.test/11" in json.dumps(messages)


def test_demonstrations_prefer_the_same_url_then_the_same_site():
    def row(url, title, arguments):
        page = PageState(url, title, f'- heading "{title}" [ref=e1]')
        return {
            "tool": "browser_navigate",
            "arguments": arguments,
            "observation": {"structured": page.structured(), "is_error": False},
        }

    rows = [
        row("http://site.test/about", "About", {"url": "http://site.test/about"}),
        row("http://other.test/", "Other", {"url": "http://other.test/"}),
        row("http://site.test/", "Home", {"url": "http://site.test/"}),
    ]
    domain = WebDomain(records_for=lambda call: rows)
    chosen = domain.ground(browser("browser_navigate", url="http://site.test/"), Session("s"), count_tokens=count).rows
    assert [r["observation"]["structured"]["title"] for r in chosen] == ["About", "Home"]  # best last
    assert (
        WebDomain(records_for=lambda call: rows, demonstrations=0)
        .ground(browser("browser_navigate", url="x"), Session("s"), count_tokens=count)
        .rows
        == []
    )


def test_demonstrations_are_the_turns_right_before_the_action():
    demo = PageState("http://site.test/about", "About", ABOUT)
    demo_row = {
        "tool": "browser_click",
        "arguments": {"ref": "e3"},
        "session": "old",
        "observation": {"structured": demo.structured(), "is_error": False},
    }
    domain = WebDomain(records_for=lambda call: [demo_row])
    messages = domain.messages(
        browser("browser_click", ref="e3"), home_session(), budget_tokens=10_000, count_tokens=count
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[3]["content"].startswith("An example from another session:\n**Action:**")
    assert messages[4]["content"] == "**Environment Observation:**\n" + demo.text()
    assert messages[5]["content"].startswith("### Turn 2\n**Action:**")
    # The system + history prefix is the same with or without demonstrations (the prefix cache holds).
    plain = WebDomain().messages(
        browser("browser_click", ref="e3"), home_session(), budget_tokens=10_000, count_tokens=count
    )
    assert messages[:3] == plain[:3]
