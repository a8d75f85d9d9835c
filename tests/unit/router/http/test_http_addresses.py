import pytest

from router.http.addresses import (
    BrowserAddresses,
    ChannelAddresses,
    Reach,
    classify,
    most_sensitive,
    origin_allowed,
    reach_of,
)


@pytest.mark.parametrize(
    ("address", "reach"),
    [
        ("169.254.169.254", Reach.METADATA),
        ("fd00:ec2::254", Reach.METADATA),
        ("169.254.3.4", Reach.LINK_LOCAL),
        ("fe80::1", Reach.LINK_LOCAL),
        ("127.0.0.1", Reach.LOOPBACK),
        ("::1", Reach.LOOPBACK),
        ("0.0.0.0", Reach.LOOPBACK),
        ("::ffff:169.254.169.254", Reach.METADATA),
        ("10.1.2.3", Reach.PRIVATE),
        ("192.168.0.1", Reach.PRIVATE),
        ("100.64.0.1", Reach.PRIVATE),
        ("93.184.216.34", Reach.PUBLIC),
    ],
)
def test_classify(address, reach):
    assert classify(address) is reach


def test_a_name_is_as_sensitive_as_its_most_sensitive_address():
    assert most_sensitive(["93.184.216.34", "169.254.169.254"]) is Reach.METADATA


async def test_metadata_names_and_literals_need_no_lookup():
    assert (await reach_of("metadata.google.internal.", 80))[0] is Reach.METADATA
    assert (await reach_of("[fd00:ec2::254]", 80))[0] is Reach.METADATA
    assert (await reach_of("localhost", 80))[0] is Reach.LOOPBACK


def test_channel_refuses_metadata_unless_a_rule_allows():
    channel = ChannelAddresses()
    assert "metadata" in channel.refusal(Reach.METADATA, "http", "169.254.169.254", 80, rule_allows=False)
    assert channel.refusal(Reach.METADATA, "http", "169.254.169.254", 80, rule_allows=True) is None
    assert channel.refusal(Reach.LOOPBACK, "http", "127.0.0.1", 80, rule_allows=False) is None


def test_browser_needs_allowed_origins_for_loopback_and_private_and_never_opens_metadata():
    browser = BrowserAddresses(["http://127.0.0.1:8000", "https://intranet.local:*"])
    assert browser.refusal(Reach.LOOPBACK, "http", "127.0.0.1", 8000, rule_allows=False) is None
    assert "allowed_origins" in browser.refusal(Reach.LOOPBACK, "http", "127.0.0.1", 8001, rule_allows=False)
    assert browser.refusal(Reach.PRIVATE, "https", "intranet.local", 9443, rule_allows=False) is None
    assert browser.refusal(Reach.PRIVATE, "ws", "127.0.0.1", 8000, rule_allows=False) is None  # ws is http's
    assert browser.refusal(Reach.METADATA, "http", "169.254.169.254", 80, rule_allows=True) is not None
    assert browser.refusal(Reach.PUBLIC, "https", "example.com", 443, rule_allows=False) is None


def test_origin_ports_default_by_scheme():
    assert origin_allowed("https", "example.test", 443, ["https://example.test"])
    assert not origin_allowed("http", "example.test", 443, ["https://example.test"])
