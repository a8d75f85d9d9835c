"""The shell channel's classifier: a command line is parsed (tree-sitter-bash),
every simple command in it classed, and the worst class wins.

A command line the parser cannot parse, that is longer than
`safety.max_command_chars`, or that runs code only known at run time is never
`safe`, and is marked not analysed (rehearsal keeps it away from the real
sandbox); raw-text patterns then still catch the well-known destructive forms.
"""

from __future__ import annotations

import re
from functools import lru_cache

from policies.safety.shell_parse import ParsedShell, parse_shell
from policies.safety.shell_args import is_device, is_harmless_target, is_system_path
from policies.safety.shell_programs import command_verdict
from policies.safety.verdict import SafetyClass, SafetyVerdict, worst

SAFE, SIDE, DESTRUCTIVE = SafetyClass.SAFE, SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE

# Well-known destructive forms, for text the parser could not analyse.
_RAW_DESTRUCTIVE = [
    (re.compile(p, re.IGNORECASE), why)
    for p, why in [
        (r"\brm\s+(-\w*[rR]\w*|--recursive)\b", "recursive delete"),
        (r"\b(mkfs(\.\w+)?|wipefs|shred|fdisk|sfdisk|parted|blkdiscard|truncate)\b", "disk or file wiping"),
        (r"\bdd\b[^\n]*\bof=/dev/", "dd onto a device"),
        (r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:", "fork bomb"),
        (r"\b(curl|wget)\b[^|\n]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b", "download piped into a shell"),
        (r"\bgit\s+push\b[^\n]*(--force|\s-f\b|--mirror|--delete)", "force push"),
        (r"\bgit\s+(reset\s+--hard|clean\s+-\w*f|filter-branch|filter-repo)\b", "git history or work discarded"),
        (r"\b(drop\s+(table|database|schema)|truncate\s+table|flushall|flushdb|dropdatabase)\b", "database drop or flush"),
        (r"\b(shutdown|reboot|halt|poweroff)\b", "machine shutdown"),
        (r"\b(terraform|tofu|pulumi)\s+destroy\b|\bkubectl\s+delete\b|\b(aws|gcloud|az)\b[^\n]*\bdelete", "cloud or cluster deletion"),
        (r"\bsystemctl\s+(stop|disable|mask)\b|\bcrontab\s+-\w*r", "service or crontab removal"),
        (r"\b(apt|apt-get|yum|dnf)\s+(remove|purge|autoremove)\b|\bpip3?\s+uninstall\b", "package removal"),
        (r"\bdocker\b[^\n]*\b(prune|rm\s+-f)\b", "docker removal"),
        (r">\s*/(etc|boot)/|>\s*/dev/(sd|nvme|hd|vd|xvd|mmcblk)", "overwrites a system file or disk"),
        (r"\bchmod\s+-R\b[^\n]*\s/(\s|$|etc|usr|bin|boot)|\bkill\s+-9\s+-?1\b", "system-wide chmod or kill"),
    ]
]


def raw_destructive(text: str) -> str | None:
    """Why `text` looks destructive by its raw text alone, or None."""
    for pattern, why in _RAW_DESTRUCTIVE:
        if pattern.search(text):
            return why
    return None


@lru_cache(maxsize=4096)
def classify_shell(command: str, *, max_chars: int = 10_000) -> SafetyVerdict:
    """The verdict on one command line (cached: agents repeat commands, and verdicts are immutable)."""
    if not command.strip():
        return SafetyVerdict(SAFE, "empty command")
    if len(command) > max_chars:
        why = raw_destructive(command)
        if why is not None:
            return SafetyVerdict(DESTRUCTIVE, f"{why} (command of {len(command)} characters, over safety.max_command_chars {max_chars}: not parsed)", analysed=False)
        return SafetyVerdict(SIDE, f"command of {len(command)} characters, over safety.max_command_chars {max_chars}: not parsed", analysed=False)
    parsed = parse_shell(command)
    verdict = classify_parsed(parsed)
    if parsed.errors or parsed.too_deep:
        problem = parsed.errors[0] if parsed.errors else f"nested shells deeper than the parser follows"
        why = raw_destructive(command)
        if why is not None:
            return SafetyVerdict(DESTRUCTIVE, f"{why} (the command did not parse: {problem})", analysed=False)
        floor = SafetyVerdict(SIDE, f"the command did not parse ({problem}): not known to be read-only", analysed=False)
        return floor.worse(verdict) if verdict.cls is DESTRUCTIVE else floor
    return verdict


def classify_parsed(parsed: ParsedShell) -> SafetyVerdict:
    verdicts = [command_verdict(command) for command in parsed.commands]
    for write in parsed.writes:
        target = write.target.replace("\x00", "$")
        if is_harmless_target(target):
            continue
        if is_system_path(write.target) or is_device(write.target):
            verdicts.append(SafetyVerdict(DESTRUCTIVE, f"redirection {'overwrites' if write.truncates else 'appends to'} {target}"))
        else:
            verdicts.append(SafetyVerdict(SIDE, f"redirection {'overwrites' if write.truncates else 'appends to'} {target}"))
    for name, body_programs in parsed.functions:
        if name and name in body_programs:
            verdicts.append(SafetyVerdict(DESTRUCTIVE, f"fork bomb: function {name!r} calls itself"))
    result = worst(verdicts, default=SafetyVerdict(SAFE, "reads only"))
    if result.cls is SAFE and verdicts:
        reasons = list(dict.fromkeys(v.reason for v in verdicts))
        return SafetyVerdict(SAFE, "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else ""))
    return result


def simple_commands(command: str) -> list[str]:
    """Every simple command of a command line (after unwrapping), as `program arg …`:
    what the rules' `command` key matches."""
    return [c.text() for c in parse_shell(command).commands]
