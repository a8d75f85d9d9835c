"""What Chromium is launched with (no browser started here)."""

from backends.browser.pool import BrowserPool
from router.config import parse_config

WEBRTC_POLICY = "--webrtc-ip-handling-policy=disable_non_proxied_udp"


def test_webrtc_is_kept_to_the_proxy_even_on_the_host():
    # On the host nothing else stands between WebRTC's own UDP sockets and the network.
    pool = BrowserPool(parse_config("browser: {isolation: host}").browser)
    options = pool._launch_options("http://127.0.0.1:8081", ["--extra"])
    assert WEBRTC_POLICY in options["args"] and options["proxy"] == {"server": "http://127.0.0.1:8081"}
    # Before the user's own flags: `browser.args` may still say otherwise, knowingly.
    tuned = BrowserPool(parse_config("browser: {isolation: host, args: ['--lang=fr']}").browser)
    args = tuned._launch_options(None, [])["args"]
    assert args.index(WEBRTC_POLICY) < args.index("--lang=fr")
