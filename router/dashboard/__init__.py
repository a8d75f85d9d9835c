"""The divergence dashboard and /metrics: pages and JSON read from store aggregates,
served by `simroute serve` beside MCP and alone by `simroute dashboard`."""
