"""Safety classes and the verdict a classifier gives a call."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SafetyClass(StrEnum):
    SAFE = "safe"  # reads only
    SIDE_EFFECT = "side_effect"  # writes, moves, installs, sends, starts something
    DESTRUCTIVE = "destructive"  # destroys data or changes the world beyond easy repair
    UNKNOWN = "unknown"  # classification raised: nothing is known about the call


# How dangerous each class is taken to be when combining verdicts (unknown is the worst:
# nothing rules out the worst).
_RANK = {SafetyClass.SAFE: 0, SafetyClass.SIDE_EFFECT: 1, SafetyClass.DESTRUCTIVE: 2, SafetyClass.UNKNOWN: 3}


@dataclass(frozen=True, slots=True)
class SafetyVerdict:
    cls: SafetyClass
    reason: str
    # False when the call could not be fully analysed (a shell command the parser could
    # not parse, too long, or running a program named at run time): rehearsal keeps such
    # calls away from the real side whatever their class.
    analysed: bool = True

    def worse(self, other: SafetyVerdict) -> SafetyVerdict:
        """The more dangerous of two verdicts (the first on a tie); not analysed is sticky."""
        chosen = other if _RANK[other.cls] > _RANK[self.cls] else self
        if chosen.analysed and not (self.analysed and other.analysed):
            return SafetyVerdict(chosen.cls, chosen.reason, analysed=False)
        return chosen


SAFE_READ = SafetyVerdict(SafetyClass.SAFE, "reads only")


def worst(verdicts: list[SafetyVerdict], *, default: SafetyVerdict = SAFE_READ) -> SafetyVerdict:
    result = default
    for verdict in verdicts:
        result = result.worse(verdict)
    return result


def at_least(verdict: SafetyVerdict, cls: SafetyClass, reason: str) -> SafetyVerdict:
    """`verdict` raised to `cls` (with `reason`) when it is less dangerous."""
    return verdict.worse(SafetyVerdict(cls, reason, analysed=verdict.analysed))
