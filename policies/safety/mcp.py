"""The MCP channel's classifier: a tool's annotations, name and description.

Annotations come from the server, which may be careless or hostile: from an
untrusted server they can only make a call less safe (`destructiveHint: true`,
`readOnlyHint: false`, `openWorldHint: true` on a tool not read-only,
`idempotentHint: false`). A server listed in `safety.trusted_servers` is believed
both ways. `safety.tools` overrides per server and tool have the last word.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE, SIDE, DESTRUCTIVE = SafetyClass.SAFE, SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE

_DESTRUCTIVE_WORDS = frozenset(
    "delete drop remove destroy purge wipe erase truncate terminate kill revoke reset uninstall rm rmdir unlink "
    "pay payment charge transfer refund purchase buy withdraw shutdown reboot flush prune".split()
)
_SIDE_WORDS = frozenset(
    "write create update set add insert put post send email mail message notify publish upload move rename commit push "
    "merge execute exec run start stop restart deploy install edit patch modify save apply invite schedule book order "
    "submit approve reject assign close open archive tag label fork clone init checkout branch replace append upsert "
    "enable disable sync import export register subscribe unsubscribe click type fill navigate press".split()
)
_READ_WORDS = frozenset(
    "get list read search find query describe show fetch view "
    "status diff log lookup convert count check inspect explain "
    "current info head preview validate ping version whoami resolve translate summarize calculate compute estimate "
    "stat stats history browse snapshot screenshot tree".split()
)
_DESCRIPTION_DESTRUCTIVE = re.compile(
    r"\b(permanently|irreversibl\w*|cannot be undone|destroys?|wipes?|deletes? (all|every))\b", re.IGNORECASE
)
_DESCRIPTION_WRITES = re.compile(
    r"\b(deletes?|removes?|drops?|writes?|creates?|updates?|modif(y|ies)|sends?|overwrites?)\b", re.IGNORECASE
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> list[str]:
    return [w for w in re.split(r"[^a-z0-9]+", _CAMEL.sub("_", name).lower()) if w]


def classify_by_name(tool: str) -> SafetyVerdict | None:
    words = name_words(tool)
    if hit := next((w for w in words if w in _DESTRUCTIVE_WORDS), None):
        return SafetyVerdict(DESTRUCTIVE, f"tool name {tool!r} says {hit!r}")
    if hit := next((w for w in words if w in _SIDE_WORDS), None):
        return SafetyVerdict(SIDE, f"tool name {tool!r} says {hit!r}")
    if hit := next((w for w in words if w in _READ_WORDS), None):
        return SafetyVerdict(SAFE, f"tool name {tool!r} says {hit!r}")
    return None


def _open_world_and_idempotence(
    verdict: SafetyVerdict, server: str, tool: str, annotations: Mapping[str, Any]
) -> SafetyVerdict:
    """The two hints that say what a write reaches and whether it repeats, used only
    where they make the call less safe (a trusted server's readOnlyHint or
    destructiveHint, believed as given, decides before them):
    - `openWorldHint: true` on a tool not annotated read-only: it acts on systems
      outside (mail, payments, other people's data) that no sandbox or snapshot undoes,
      so it is at least a side effect, whatever its name says;
    - `idempotentHint: false`: a second identical call has a further effect, so the
      call changes state (even behind a read-sounding name): at least a side effect.
    `idempotentHint: true` never lowers a class (a delete is idempotent and destructive),
    nor does `openWorldHint: false` (a closed world can still be wiped). Neither raises a
    write to destructive on its own: most open-world, repeatable writes (an issue, a
    comment) are undone by hand, and `destructiveHint` is the hint that says otherwise;
    rehearsal diverts MCP side effects by default anyway."""
    if annotations.get("openWorldHint") is True and annotations.get("readOnlyHint") is not True:
        verdict = verdict.worse(
            SafetyVerdict(
                SIDE, f"{server!r} annotates {tool!r} openWorldHint (it reaches outside systems) and not readOnlyHint"
            )
        )
    if annotations.get("idempotentHint") is False:
        verdict = verdict.worse(
            SafetyVerdict(
                SIDE, f"{server!r} annotates {tool!r} idempotentHint false (a repeated call has a further effect)"
            )
        )
    return verdict


def classify_mcp(
    server: str,
    tool: str,
    definition: Mapping[str, Any] | None,
    *,
    trusted: bool,
    override: SafetyClass | None = None,
) -> SafetyVerdict:
    if override is not None:
        return SafetyVerdict(override, f"safety.tools sets {server}.{tool} to {override}")
    annotations = (definition or {}).get("annotations") or {}
    read_only = annotations.get("readOnlyHint")
    destructive = annotations.get("destructiveHint")
    if trusted and isinstance(read_only, bool | None) and (read_only is not None or destructive is not None):
        if read_only:
            return SafetyVerdict(SAFE, f"trusted server {server!r} annotates {tool!r} readOnlyHint")
        if destructive is False:
            return SafetyVerdict(SIDE, f"trusted server {server!r} annotates {tool!r} as writing, not destructive")
        return SafetyVerdict(DESTRUCTIVE, f"trusted server {server!r} annotates {tool!r} destructiveHint")
    by_name = classify_by_name(tool)
    description = str((definition or {}).get("description") or "")
    verdict = by_name or SafetyVerdict(SIDE, f"tool {tool!r} is not known to be read-only")
    if destructive is True and read_only is not True:
        verdict = verdict.worse(SafetyVerdict(DESTRUCTIVE, f"{server!r} annotates {tool!r} destructiveHint"))
    elif read_only is False:
        verdict = verdict.worse(SafetyVerdict(SIDE, f"{server!r} annotates {tool!r} as not read-only"))
    verdict = _open_world_and_idempotence(verdict, server, tool, annotations)
    if _DESCRIPTION_DESTRUCTIVE.search(description):
        verdict = verdict.worse(SafetyVerdict(DESTRUCTIVE, f"the description of {tool!r} says it destroys data"))
    elif verdict.cls is SAFE and (match := _DESCRIPTION_WRITES.search(description)):
        verdict = verdict.worse(SafetyVerdict(SIDE, f"the description of {tool!r} says {match.group(0).lower()!r}"))
    return verdict
