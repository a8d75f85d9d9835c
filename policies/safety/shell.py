"""The shell channel's classifier: a command line is parsed (tree-sitter-bash),
every simple command in it classed, and the worst class wins.

A command line the parser cannot parse, that is longer than
`safety.max_command_chars`, or that runs code only known at run time is never
`safe`, and is marked not analysed (rehearsal keeps it away from the real
sandbox); raw-text patterns then still catch the well-known destructive forms.
"""

from __future__ import annotations

from functools import lru_cache

from policies.safety.shell_args import is_device, is_harmless_target, is_system_path
from policies.safety.shell_commands import ParsedShell
from policies.safety.shell_parse import parse_shell
from policies.safety.shell_programs import command_verdict
from policies.safety.shell_raw import raw_destructive
from policies.safety.verdict import SafetyClass, SafetyVerdict, worst

SAFE, SIDE, DESTRUCTIVE = SafetyClass.SAFE, SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE


@lru_cache(maxsize=4096)
def classify_shell(command: str, *, max_chars: int = 10_000) -> SafetyVerdict:
    """The verdict on one command line (cached: agents repeat commands, and verdicts are immutable)."""
    if not command.strip():
        return SafetyVerdict(SAFE, "empty command")
    if len(command) > max_chars:
        why = raw_destructive(command)
        if why is not None:
            return SafetyVerdict(
                DESTRUCTIVE,
                f"{why} (command of {len(command)} characters, over safety.max_command_chars {max_chars}: not parsed)",
                analysed=False,
            )
        return SafetyVerdict(
            SIDE,
            f"command of {len(command)} characters, over safety.max_command_chars {max_chars}: not parsed",
            analysed=False,
        )
    parsed = parse_shell(command)
    verdict = classify_parsed(parsed)
    if parsed.errors or parsed.too_deep:
        problem = parsed.errors[0] if parsed.errors else "nested shells deeper than the parser follows"
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
            verdicts.append(
                SafetyVerdict(DESTRUCTIVE, f"redirection {'overwrites' if write.truncates else 'appends to'} {target}")
            )
        else:
            verdicts.append(
                SafetyVerdict(SIDE, f"redirection {'overwrites' if write.truncates else 'appends to'} {target}")
            )
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
