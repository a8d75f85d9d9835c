"""The browser channel's real side: Playwright driving Debian's Chromium.

`page_state` holds the text form of a page (shared with the Web world-model
domain, so real and simulated observations have one shape); `session` is one
agent session's browser context and its actions, `page_watch` its current page
and what happens to it unasked, `snapshots` the page as the agent sees it,
`driver_errors` what Playwright raises; `pool` owns the Chromium process, on the host
or contained: `isolation` decides where it runs, `container` makes its hardened
container and launcher, `proxy_socket` is the container's only way out.
"""
