#!/bin/sh
# The first step of simroute's Python images: Debian packages (python3 of trixie is
# 3.13) and, when the build is given one, an extra CA bundle trusted from then on
# (build arg EXTRA_CA_CERT, PEM text: a TLS-inspecting proxy's CA). The images'
# environment points Python's TLS clients at the system bundle that includes it.
# Usage: os-packages.sh DEBIAN_PACKAGE...
set -eu
if [ -n "${EXTRA_CA_CERT:-}" ]; then
  mkdir -p /usr/local/share/ca-certificates
  printf '%s\n' "$EXTRA_CA_CERT" >/usr/local/share/ca-certificates/simroute-extra-ca.crt
  # Trusted by apt already when the base carries ca-certificates (a mirror over https).
  if command -v update-ca-certificates >/dev/null 2>&1; then update-ca-certificates >/dev/null; fi
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates "$@" >/dev/null
update-ca-certificates >/dev/null
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /usr/share/doc/* /usr/share/man/*
