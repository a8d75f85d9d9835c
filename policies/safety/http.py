"""The HTTP channel's classifier: method, host and path, GraphQL mutations.

GET, HEAD and OPTIONS read (the methods are configurable). Any other method
writes; it destroys when it deletes, pays, or sends mail or chat messages, or
when it writes to one of `safety.production_hosts`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from typing import Any

from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE, SIDE, DESTRUCTIVE = SafetyClass.SAFE, SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE

_PAYMENT_PATH = re.compile(
    r"/(charges?|payments?|payment_intents|payouts?|transfers?|refunds?|checkout|pay|purchases?|orders?/[^/]+/(pay|capture)|"
    r"invoices/[^/]+/pay|subscriptions?/[^/]+/cancel|billing|withdrawals?|captures?)(/|$|\?|\.)",
    re.IGNORECASE,
)
_PAYMENT_HOSTS = (
    "api.stripe.com",
    "api.paypal.com",
    "api-m.paypal.com",
    "*.braintreegateway.com",
    "*.adyen.com",
    "connect.squareup.com",
    "api.mollie.com",
    "api.razorpay.com",
    "api.checkout.com",
)
_SENDING_PATH = re.compile(
    r"(/send(_?(e?mail|sms|message|notification)s?)?|/mail/send|/messages/send|/chat\.postMessage|/sendMessage|/sms|/tweets|/statuses/update)(/|$|\?|\.)",
    re.IGNORECASE,
)
_SENDING_HOSTS = (
    "api.sendgrid.com",
    "api.mailgun.net",
    "api.postmarkapp.com",
    "slack.com",
    "*.slack.com",
    "api.twilio.com",
    "api.telegram.org",
    "discord.com",
    "graph.microsoft.com",
    "gmail.googleapis.com",
    "api.resend.com",
)
_DELETING_PATH = re.compile(
    r"/(delete|destroy|drop|purge|wipe|remove|terminate|truncate|reset)(\w*)(/|$|\?)", re.IGNORECASE
)
_GRAPHQL_READ = re.compile(r"^\s*(?:#[^\n]*\n\s*)*(query\b|\{)", re.IGNORECASE)
_MUTATION = re.compile(r"^\s*(?:#[^\n]*\n\s*)*mutation\b(?:\s+\w+)?[^{]*\{\s*(\w+)", re.IGNORECASE)


def host_of(server: str) -> str:
    """`host[:port]` -> `host` (IPv6 brackets kept off)."""
    if server.startswith("["):
        return server[1 : server.index("]")] if "]" in server else server
    return server.rsplit(":", 1)[0] if server.count(":") == 1 else server


def host_matches(host: str, patterns: Iterable[str]) -> str | None:
    """The first glob in `patterns` that `host` matches (a bare domain also covers its subdomains)."""
    host = host.lower()
    for pattern in patterns:
        p = pattern.lower()
        if fnmatch.fnmatchcase(host, p) or (not any(c in p for c in "*?[") and host.endswith("." + p)):
            return pattern
    return None


def graphql_mutation(arguments: Mapping[str, Any]) -> str | None:
    """The first field of a GraphQL mutation in the body or query string, or None."""
    texts = []
    body = arguments.get("body")
    if isinstance(body, Mapping):
        texts.append(body.get("query"))
    elif isinstance(body, list):
        texts.extend(item.get("query") for item in body if isinstance(item, Mapping))
    elif isinstance(body, str):
        texts.append(body)
    query = arguments.get("query")
    if isinstance(query, Mapping):
        texts.append(query.get("query"))
    for text in texts:
        if isinstance(text, str) and (match := _MUTATION.search(text)):
            return match.group(1)
    return None


def classify_http(
    server: str,
    arguments: Mapping[str, Any],
    *,
    safe_methods: frozenset[str],
    production_hosts: tuple[str, ...],
) -> SafetyVerdict:
    method = str(arguments.get("method") or "GET").upper()
    host = host_of(server)
    path = str(arguments.get("path") or "/")
    mutation = graphql_mutation(arguments)
    if mutation is not None:
        words = re.split(r"(?<=[a-z])(?=[A-Z])|_", mutation)
        deleting = any(
            w.lower() in ("delete", "remove", "destroy", "drop", "purge", "pay", "charge", "refund", "transfer", "send")
            for w in words
        )
        if deleting or host_matches(host, production_hosts):
            return SafetyVerdict(DESTRUCTIVE, f"GraphQL mutation {mutation!r} on {host}")
        return SafetyVerdict(SIDE, f"GraphQL mutation {mutation!r}")
    body = arguments.get("body")
    if isinstance(body, Mapping) and isinstance(body.get("query"), str) and _GRAPHQL_READ.match(body["query"]):
        return SafetyVerdict(SAFE, "GraphQL query (no mutation) reads")
    if method in safe_methods:
        if _DELETING_PATH.search(path):
            return SafetyVerdict(SIDE, f"{method} {path} names a deletion in its path")
        return SafetyVerdict(SAFE, f"{method} reads")
    target = f"{method} {host}{path}"
    if production_hosts and (pattern := host_matches(host, production_hosts)):
        return SafetyVerdict(DESTRUCTIVE, f"{target} writes to a production host (safety.production_hosts {pattern!r})")
    if method == "DELETE":
        return SafetyVerdict(DESTRUCTIVE, f"{target} deletes")
    if _PAYMENT_PATH.search(path) or host_matches(host, _PAYMENT_HOSTS):
        return SafetyVerdict(DESTRUCTIVE, f"{target} looks like a payment")
    if _SENDING_PATH.search(path) or host_matches(host, _SENDING_HOSTS):
        return SafetyVerdict(DESTRUCTIVE, f"{target} looks like sending mail or messages")
    if _DELETING_PATH.search(path):
        return SafetyVerdict(DESTRUCTIVE, f"{target} names a deletion in its path")
    return SafetyVerdict(SIDE, f"{method} writes")
