"""The `simroute` command (typer): `main.py` registers the commands; `common.py` what
they share (the --config option, the store read, logging and SIGTERM); `serving.py`
mcp/serve/http-proxy/dashboard; `records.py` records and recordings; `maintenance.py`
drain, prune and worker; `setup.py` ca and check-config; `explain.py` explain;
`learned.py` train/eval/reload; `shadow.py` noise and diff; `diff_view.py` renders a
diff; `demo.py`/`demo_http.py` the demo, launched as a user launches it (`launch.py`:
ports and processes).

Nothing in the product imports this package.
"""
