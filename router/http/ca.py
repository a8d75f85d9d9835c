"""simroute's certificate authority for HTTPS interception: one per user,
created on first need (by `simroute ca` or the first start of the HTTP channel).

It is mitmproxy's CA format, in `http.ca_dir` (default `~/.simroute`):
`mitmproxy-ca.pem` (key + certificate, private) and `mitmproxy-ca-cert.pem`
(the certificate clients trust).
"""

from __future__ import annotations

from pathlib import Path

BASENAME = "mitmproxy"  # mitmproxy's TLS addon reads this name from its confdir
KEY_SIZE = 2048


def certificate_path(ca_dir: Path) -> Path:
    return ca_dir / f"{BASENAME}-ca-cert.pem"


class CAError(ValueError):
    """simroute's CA cannot be used (a corrupt or unreadable file). The message names
    the file and how to make a new one."""


def key_path(ca_dir: Path) -> Path:
    return ca_dir / f"{BASENAME}-ca.pem"


def ensure_ca(ca_dir: Path) -> Path:
    """Create the CA in `ca_dir` if it is missing, check it loads; returns the
    certificate's path. Only a folder created here is made private (0700): an
    existing `ca_dir` (a home, a mounted volume) keeps its mode."""
    from mitmproxy import certs

    ca_dir = ca_dir.expanduser()
    try:
        if not ca_dir.exists():
            ca_dir.mkdir(parents=True)
            ca_dir.chmod(0o700)
        certs.CertStore.from_store(ca_dir, BASENAME, KEY_SIZE)
    except OSError as exc:
        raise OSError(f"cannot create simroute's CA in {ca_dir}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # mitmproxy/cryptography: the PEM does not parse
        problem = str(exc).split(". ")[0]
        raise CAError(
            f"the CA file {key_path(ca_dir)} is not a valid CA ({problem}); make a new one with "
            "`simroute ca --regenerate` (clients must then trust the new certificate)"
        ) from exc
    return certificate_path(ca_dir)


def regenerate_ca(ca_dir: Path) -> Path:
    """Replace the CA in `ca_dir` with a new one (mitmproxy's files of it only)."""
    ca_dir = ca_dir.expanduser()
    for stale in ca_dir.glob(f"{BASENAME}-ca*") if ca_dir.is_dir() else ():
        try:
            stale.unlink()
        except OSError as exc:
            raise OSError(f"cannot remove {stale}: {exc.strerror or exc}") from exc
    return ensure_ca(ca_dir)


def trust_instructions(cert: Path) -> str:
    return f"""\
simroute's CA certificate: {cert}

Trust it in the agent's HTTP client (HTTPS through the proxy is decrypted with it):
  curl:      curl --proxy http://127.0.0.1:8080 --cacert {cert} https://…
  requests:  REQUESTS_CA_BUNDLE={cert}   (or verify="{cert}")
  httpx:     SSL_CERT_FILE={cert}        (or verify="{cert}")
  Node:      NODE_EXTRA_CA_CERTS={cert}
  Python ssl / OpenSSL tools:  SSL_CERT_FILE={cert}
  system store (Debian/Ubuntu):
             sudo cp {cert} /usr/local/share/ca-certificates/simroute.crt && sudo update-ca-certificates
Then point the agent at the proxy: HTTP_PROXY=http://127.0.0.1:8080 HTTPS_PROXY=http://127.0.0.1:8080
Keep {cert.parent / (BASENAME + "-ca.pem")} private: it holds the CA's key."""
