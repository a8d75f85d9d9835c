"""The `simroute` command (typer): `main.py` wires the commands; `common.py` the
options they share; `learned.py` train/eval/reload; `shadow.py` noise and diff;
`diff_view.py` renders a diff; `demo.py`/`demo_http.py` the demo, launched as a user
launches it (`launch.py`: ports and processes).

Nothing in the product imports this package.
"""
