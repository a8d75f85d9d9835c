#!/usr/bin/env bash
# Builds simroute's images: the shell sandbox `simroute-sandbox:latest` from
# deploy/sandbox/Dockerfile and the contained browser `simroute-browser:latest`
# (Debian's Chromium, browser.isolation) from deploy/browser/Dockerfile.
# With --stack: the images of docker-compose.yml instead (router, world model,
# Redis, balancer), from the wheelhouse scripts/stack-wheelhouse.sh fills.
#
# Its base, debian:trixie-slim, is pulled where a registry answers; where none
# does (air-gapped machines, CI without a registry) the same Debian release is
# built from Debian's packages with debootstrap and imported under that name,
# so the one Dockerfile builds in both places. Idempotent: present images are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=debian:trixie-slim
IMAGE=${SIMROUTE_SANDBOX_IMAGE:-simroute-sandbox:latest}
BROWSER_IMAGE=${SIMROUTE_BROWSER_IMAGE:-simroute-browser:latest}
SUITE=trixie
PACKAGES=bash,coreutils,findutils,grep,sed,gawk,diffutils,procps,python3,git,curl,ca-certificates,less,file,tar,gzip,xz-utils,passwd
say() { printf '\033[1mimages:\033[0m %s\n' "$*" >&2; }

if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers (docker info failed): the shell's real route will report it, the browser runs on the host; simulated calls still work"
  exit 0
fi
build() {  # IMAGE FOLDER
  say "building $1"
  local log; log=$(mktemp)
  docker build -q -t "$1" "$2" >/dev/null 2>"$log" || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
  say "ready: $1"
}
ensure_base() {
  # One build of the base at a time: the set-up runs this script twice concurrently.
  exec 9>"${TMPDIR:-/tmp}/simroute-base-image.lock"
  flock 9
  if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    if timeout 60 docker pull -q "$BASE" >/dev/null 2>&1; then
      say "pulled $BASE"
    else
      # The mirror the machine already uses for its own packages.
      mirror=$(grep -rhoE '^(URIs:|deb) *https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
        | grep -oE 'https?://[^ ]+' | head -n1 || true)
      mirror=${mirror:-http://deb.debian.org/debian}
      SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      rootfs=$(mktemp -d)
      trap '$SUDO rm -rf "$rootfs"' EXIT
      say "no registry: building $BASE from Debian packages ($SUITE from $mirror, ~1 minute)"
      $SUDO debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$mirror" >/dev/null
      # Trim what a slim image leaves out; apt lists would only go stale.
      $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
      $SUDO tar -C "$rootfs" -c . | docker import --change 'CMD ["bash"]' - "$BASE" >/dev/null
      say "imported $BASE"
    fi
  fi
  flock -u 9
}

if [ "${1:-}" = "--stack" ]; then
  ensure_base
  ./scripts/stack-wheelhouse.sh
  say "building the stack's images (docker-compose build: router, world-model, redis, balancer)"
  log=$(mktemp)
  # The token is not used by a build; compose only insists on it being set.
  compose=(docker-compose); command -v docker-compose >/dev/null 2>&1 || compose=(docker compose)
  SIMROUTE_TOKEN=${SIMROUTE_TOKEN:-build-only} "${compose[@]}" build -q >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 1; }
  rm -f "$log"
  say "ready: simroute:local simroute-world-model:local simroute-redis:local simroute-balancer:local"
  exit 0
fi

rebuild=""; [ "${1:-}" = "--rebuild" ] && rebuild=1
want_browser=""
if [ -n "$rebuild" ] || ! docker image inspect "$BROWSER_IMAGE" >/dev/null 2>&1; then want_browser=1; fi
# An image built before simroute labelled its containers at `docker run` carries
# the old image-wide label: rebuilt, so containers started from it by others are not mistaken for simroute's.
stale=$(docker image inspect --format '{{ index .Config.Labels "org.simroute.sandbox" }}' "$IMAGE" 2>/dev/null || true)
want_sandbox=1
if docker image inspect "$IMAGE" >/dev/null 2>&1 && [ -z "$rebuild" ] && [ -z "$stale" ]; then
  want_sandbox=""
fi
# A fresh machine: what of the compose stack needs no wheelhouse is built now, while
# the set-up compiles llama-cpp-python; `--stack` then finds those layers cached.
want_stack_base=""
docker image inspect simroute:local >/dev/null 2>&1 || want_stack_base=1
[ -n "$want_sandbox$want_browser$want_stack_base" ] || exit 0

ensure_base
[ -z "$want_sandbox" ] || build "$IMAGE" deploy/sandbox
# Chromium and its libraries from Debian's mirror (~150 packages, ~100 MB to download).
[ -z "$want_browser" ] || build "$BROWSER_IMAGE" deploy/browser
if [ -n "$want_stack_base" ]; then
  build simroute-redis:local deploy/redis
  build simroute-balancer:local deploy/balancer
  # The first stage of the router and world-model images (Debian packages), untagged.
  say "building the Python images' first stage"
  docker build -q --target runtime --build-arg EXTRA_CA_CERT="${SIMROUTE_EXTRA_CA_CERT:-}" . >/dev/null 2>&1 \
    || say "the Python images' first stage did not build now; --stack will try again"
fi
