#!/bin/sh
# Creates the virtual environment VENV and installs REQUIREMENTS into it from the
# wheelhouse at /wheels alone (scripts/stack-wheelhouse.sh fills it on the host): no
# index, no compiler. uv is taken from its wheel there; Debian's python3 has no pip.
# Usage: wheelhouse-install.sh VENV UV_PIP_INSTALL_ARGUMENT...
set -eu
venv=$1; shift
if [ ! -x /usr/local/bin/uv ]; then
  python3 -c 'import glob, os, zipfile
wheel = zipfile.ZipFile(sorted(glob.glob("/wheels/uv-*.whl"))[-1])
member = next(n for n in wheel.namelist() if n.endswith(".data/scripts/uv"))
with open("/usr/local/bin/uv", "wb") as out:
    out.write(wheel.read(member))
os.chmod("/usr/local/bin/uv", 0o755)'
fi
uv venv -q --python /usr/bin/python3 "$venv"
# Compiled now, not at every container start (a replica started in 36 s without it).
UV_NO_CACHE=1 uv pip install -q --compile-bytecode --python "$venv/bin/python" --no-index --find-links /wheels "$@"
