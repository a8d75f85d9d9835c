"""Well-known destructive shell forms matched on raw text: the net under what the
parser cannot analyse (a command line that did not parse or is too long) and under
program text handed to an interpreter (`python -c "os.system('rm -rf /')"`), which
is not itself parsed as shell."""

from __future__ import annotations

import re

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
        (
            r"\b(drop\s+(table|database|schema)|truncate\s+table|flushall|flushdb|dropdatabase)\b",
            "database drop or flush",
        ),
        (r"\b(shutdown|reboot|halt|poweroff)\b", "machine shutdown"),
        (
            r"\b(terraform|tofu|pulumi)\s+destroy\b|\bkubectl\s+delete\b|\b(aws|gcloud|az)\b[^\n]*\bdelete",
            "cloud or cluster deletion",
        ),
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
