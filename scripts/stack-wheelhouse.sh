#!/usr/bin/env bash
# Fills .wheelhouse/ (gitignored) in the clone: the build input of the stack's
# Python images (Dockerfile, deploy/world-model/Dockerfile).
#   .wheelhouse/wheels/  every wheel of requirements.lock + deploy/image/extras.txt,
#                        llama-cpp-python from the set-up's compiled wheelhouse
#   .wheelhouse/models/  the bundled GGUF the world-model image serves
# The images then install with no index (no 140 downloads inside every build, no
# compiler). The wheels are fetched once per machine per lock into the cache
# (keyed by the pins' hash) and linked into the clone. Needs scripts/setup.sh's
# llama-cpp-python wheel and model (it builds them); idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cache-paths.sh
say() { printf '\033[1mwheelhouse:\033[0m %s\n' "$*" >&2; }
PIP=${SIMROUTE_PIP:-.venv/bin/python -m pip}

pins=$(mktemp); trap 'rm -f "$pins"' EXIT
grep -hE '^[A-Za-z0-9_.-]+==' requirements.lock deploy/image/extras.txt | sort -u >"$pins"
key=$(sha256sum "$pins" | cut -c1-16)
STACK="$CACHE/wheelhouse/stack-$key"

llama=$(ls "$WHEELHOUSE"/llama_cpp_python-"$LLAMA_VERSION"-*.whl 2>/dev/null | head -n1 || true)
[ -n "$llama" ] || { say "no llama-cpp-python $LLAMA_VERSION wheel in $WHEELHOUSE: run scripts/setup.sh first"; exit 1; }
[ -s "$MODELS/$MODEL_FILE" ] || { say "no $MODEL_FILE in $MODELS: run scripts/setup.sh first"; exit 1; }

if [ ! -f "$STACK/.complete" ]; then
  say "fetching $(wc -l <"$pins") wheels for the images into $STACK (once per lock)"
  partial="$STACK.partial"; rm -rf "$partial"; mkdir -p "$partial"
  # Exact pins, so no resolution (--no-deps); llama-cpp-python only as the compiled wheel.
  $PIP wheel -q --no-deps --only-binary llama-cpp-python --find-links "$WHEELHOUSE" -w "$partial" -r "$pins"
  touch "$partial/.complete"
  rm -rf "$STACK"; mv "$partial" "$STACK"
fi

# Hard links where the cache shares the clone's file system (instant), copies elsewhere.
link() { ln -f "$1" "$2" 2>/dev/null || cp -f "$1" "$2"; }
rm -rf .wheelhouse/wheels; mkdir -p .wheelhouse/wheels .wheelhouse/models
for wheel in "$STACK"/*.whl; do link "$wheel" .wheelhouse/wheels/; done
link "$MODELS/$MODEL_FILE" .wheelhouse/models/model.gguf
say "ready: .wheelhouse ($(ls .wheelhouse/wheels | wc -l) wheels, $MODEL_FILE)"
