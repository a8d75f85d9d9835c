"""What one simple command does to the world, by program and arguments.

`command_verdict(cmd)` classes one `SimpleCommand` (already unquoted and
unwrapped by `shell_parse`). Programs not known to be read-only are side
effects; the destructive ones are listed with the arguments that make them so
(files, disks, system paths and interpreters here; processes, services, accounts
and the machine in `shell_system`; developer and operations tools in
`shell_devtools`).
"""

from __future__ import annotations

import re

from policies.safety.shell_args import (
    DESTRUCTIVE,
    DYNAMIC,
    SAFE,
    SIDE,
    Rule,
    downloads,
    is_device,
    is_harmless_target,
    is_system_path,
    operands,
    short_flags,
    verdict,
)
from policies.safety.shell_commands import SimpleCommand
from policies.safety.shell_devtools import DEVTOOL_RULES, packages
from policies.safety.shell_raw import raw_destructive
from policies.safety.shell_system import SYSTEM_RULES
from policies.safety.shell_wrappers import is_shell
from policies.safety.verdict import SafetyVerdict

READ_ONLY = frozenset(
    """ls ll dir vdir cat tac head tail less more grep egrep fgrep rg ag ack pwd echo printf wc sort uniq cut tr diff
    cmp comm file stat du df free uptime whoami id groups uname printenv which type whereis ps pgrep pidof lsof netstat
    ss test [ [[ true false : cd pushd popd dirs basename dirname realpath readlink md5sum sha1sum sha256sum sha512sum
    cksum b2sum jq yq column nl xxd hexdump od strings tree history sleep seq yes man help info fold fmt expand unexpand
    paste join rev base64 base32 cal bc expr locale nproc lscpu lsblk lsusb lspci lsmod blkid findmnt getent dig
    nslookup host ping traceroute tracepath whois top htop vmstat iostat mpstat dmesg last lastlog w who users alias
    set shopt export local declare typeset readonly read let wait jobs hash ulimit umask tty clear tput stty
    numfmt shuf look zcat zgrep zless zmore bzcat xzcat zstdcat ldd nm objdump readelf size file sha224sum
    env nohup time logname arch getconf hostnamectl timedatectl lsns lslocks iconv fc-list sensors
    watch xargs timeout nice ionice command builtin stdbuf setsid chronic""".split()
)
_WRAPPERS = frozenset(
    "sudo doas run0 env nice ionice nohup time command builtin "
    "exec setsid stdbuf timeout xargs watch eval chronic unbuffer".split()
)
_INTERPRETERS = frozenset(
    {"python", "python2", "python3", "node", "nodejs", "ruby", "perl", "php", "deno", "bun", "lua", "Rscript", "pwsh"}
)


def command_verdict(cmd: SimpleCommand) -> SafetyVerdict:
    """The class of one simple command, with a reason naming it."""
    if not cmd.argv:
        return verdict(SAFE, "no command")
    if cmd.dynamic_program:
        shown = cmd.text()[:80]
        if downloads(cmd.argv[0]) or any(p in ("curl", "wget") for p in cmd.substituted):
            return verdict(DESTRUCTIVE, f"runs code downloaded at run time: {shown}", analysed=False)
        return verdict(SIDE, f"runs a program or script only known at run time: {shown}", analysed=False)
    name = cmd.program
    args = cmd.argv[1:]
    via = " via " + " > ".join(cmd.via) if cmd.via else ""
    special = _BY_PROGRAM.get(name) or _by_prefix(name)
    if special is not None:
        found = special(name, args, cmd)
        if found is not None:
            cls, why = found[0], found[1]
            analysed = found[2] if len(found) > 2 else True  # a rule may add False: it could not see what runs
            return verdict(cls, f"{why}{via}", analysed=analysed)
    if name in _WRAPPERS:
        return verdict(SAFE, f"{name} runs the command it wraps")
    if name in READ_ONLY:
        return verdict(SAFE, f"{name} only reads")
    return verdict(SIDE, f"{name} is not known to be read-only{via}")


def _rm(name, args, cmd):
    flags = short_flags(args)
    recursive = "r" in flags or "R" in flags or "--recursive" in args
    targets = operands(args)
    if recursive:
        return DESTRUCTIVE, f"recursive delete: {cmd.text()[:120]}"
    if any(is_system_path(t) for t in targets):
        return DESTRUCTIVE, f"deletes a system path: {cmd.text()[:120]}"
    if any(v.startswith(("find -exec", "find -execdir", "find -ok", "xargs")) for v in cmd.via):
        return DESTRUCTIVE, f"bulk delete of every file fed to {name} ({cmd.via[-1]})"
    return SIDE, f"deletes files: {cmd.text()[:120]}"


def _wipe(name, args, cmd):
    return DESTRUCTIVE, f"{name} wipes disks, filesystems or file contents"


def _dd(name, args, cmd):
    target = next((a[3:] for a in args if a.startswith("of=")), None)
    if target is None:
        return SAFE, "dd without of= writes to stdout"
    if is_device(target) or is_system_path(target) or DYNAMIC in target:
        return DESTRUCTIVE, f"dd overwrites {target.replace(DYNAMIC, '$')}"
    return SIDE, f"dd writes {target}"


def _writes_paths(name, args, cmd):
    targets = operands(args)
    if name == "mv" and any(is_system_path(t) for t in targets):
        return DESTRUCTIVE, f"moves a system path: {cmd.text()[:120]}"
    if (
        name == "mv"
        and len(targets) >= 2
        and is_harmless_target(targets[-1])
        and not targets[-1].startswith("/dev/shm/")
    ):
        # Writing to /dev/null changes nothing; moving a file onto it deletes the file
        # (and, as root, replaces the device with it, breaking every program that uses it).
        return DESTRUCTIVE, f"mv onto {targets[-1]} destroys what it moves: {cmd.text()[:120]}"
    if name in ("cp", "ln", "install", "rsync", "scp") and targets and is_system_path(targets[-1]):
        return DESTRUCTIVE, f"overwrites a system path: {cmd.text()[:120]}"
    if name in ("touch", "mkdir", "tee", "rmdir", "unlink", "patch") and any(is_system_path(t) for t in targets):
        return DESTRUCTIVE, f"{name} changes a system path: {cmd.text()[:120]}"
    if name == "rsync" and any(a.startswith("--delete") or a == "--remove-source-files" for a in args):
        return DESTRUCTIVE, "rsync --delete deletes files at the destination"
    return SIDE, f"{name} writes files"


def _tar(name, args, cmd):
    """Extraction into a system path (`tar -C / -xzf rootfs.tgz`) overwrites system
    files with whatever the archive holds; other uses fall back to the defaults."""
    bundle = args[0] if args and not args[0].startswith("-") and args[0].isalpha() else ""  # old style: `tar xzf a.tgz`
    # `-C/xdir` names a folder, not flags.
    flags = short_flags(tuple(a for a in args if not a.startswith("-C"))) + bundle
    extracts = "x" in flags or any(a in ("--extract", "--get") for a in args)
    if not extracts:
        return None
    folders = [a[len("--directory=") :] for a in args if a.startswith("--directory=")]
    folders += [a[2:] for a in args if a.startswith("-C") and len(a) > 2]
    folders += [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-C", "--directory")]
    if bundle and "C" in bundle:  # `tar xzfC a.tgz /`: bundled letters take their arguments in order
        taking = [c for c in bundle if c in "fCTXgKNLV"]
        if taking.index("C") + 1 < len(args):
            folders.append(args[taking.index("C") + 1])
    if into := next((f for f in folders if is_system_path(f)), None):
        return DESTRUCTIVE, f"tar extracts into a system path ({into.replace(DYNAMIC, '$')}): {cmd.text()[:120]}"
    if "P" in flags or "--absolute-names" in args:
        return (
            DESTRUCTIVE,
            f"tar -P extracts members to their absolute paths, system paths included: {cmd.text()[:120]}",
        )
    return None


def _sed(name, args, cmd):
    in_place = "i" in short_flags(tuple(a for a in args if not a.startswith("-e"))) or any(
        a.startswith("--in-place") for a in args
    )
    if name == "perl" and not in_place:
        return None
    if not in_place:
        return SAFE, f"{name} without -i writes to stdout"
    if any(is_system_path(t) for t in operands(args)):
        return DESTRUCTIVE, f"{name} -i rewrites a system file"
    return SIDE, f"{name} -i edits files in place"


def _awk(name, args, cmd):
    program = " ".join(args)
    if re.search(r"system\s*\(|\|\s*getline|print[f]?\b[^;}]*>{1,2}\s*[\"$a-zA-Z]|\|\s*\"", program):
        return SIDE, f"{name} program runs commands or writes files"
    return SAFE, f"{name} reads and prints"


def _find(name, args, cmd):
    if "-delete" in args:
        return DESTRUCTIVE, "find -delete deletes every file it matches"
    if any(a in ("-fprint", "-fprintf", "-fls", "-fprint0") for a in args):
        return SIDE, "find writes a file list"
    return SAFE, "find only lists"


def _chmod(name, args, cmd):
    recursive = "R" in short_flags(args) or "--recursive" in args
    targets = operands(args)[1:] if name != "chattr" else operands(args)
    if recursive and any(is_system_path(t) for t in targets):
        return DESTRUCTIVE, f"recursive {name} on a system path: {cmd.text()[:120]}"
    if any(
        t.rstrip("/*") == "" or re.search(r"sudoers|/etc/(shadow|passwd|group)\b|/\.ssh/", t)
        for t in targets
        if t.startswith("/")
    ):
        return DESTRUCTIVE, f"{name} on a system-critical path: {cmd.text()[:120]}"
    if recursive and any(t.replace(DYNAMIC, "$").rstrip("/") in ("~", "$HOME", "${HOME}") for t in targets):
        return DESTRUCTIVE, f"recursive {name} on the home folder"
    return SIDE, f"{name} changes permissions or owners"


def _truncate(name, args, cmd):
    return DESTRUCTIVE, f"truncate cuts files: {cmd.text()[:120]}"


# Program text handed to an interpreter (`python -c`, `node -e`, `perl -e`): what it
# deletes or runs is looked for in the text; it is not otherwise analysed.
_CODE_DELETES = re.compile(
    r"rmtree|os\.(remove|unlink|rmdir|removedirs)\b|\.unlink\(|unlinkSync|rmSync|rmdirSync|rimraf|fs\.rm\b|FileUtils\.rm_r|File\.delete|\bunlink\s*\("
)
_CODE_RUNS = re.compile(
    r"os\.system|subprocess|os\.exec|os\.popen|child_process|execSync|spawn|\bsystem\s*\(|`[^`]+`|\bexec\s*\(|eval\s*\("
)


def _code(name, args, cmd):
    """(class, why, analysed) of inline program text, or None when there is none."""
    code = " ".join(
        args[i + 1]
        for i, a in enumerate(args[:-1])
        if a in ("-c", "-e", "-E", "--eval", "-r", "-p")
        or (a.startswith("-") and not a.startswith("--") and a[-1] in "ce")
    )
    if not code:
        return None
    if (why := raw_destructive(code)) is not None:
        return DESTRUCTIVE, f"{name} code runs a {why}", False
    if _CODE_DELETES.search(code):
        return DESTRUCTIVE, f"{name} code deletes files", False
    if _CODE_RUNS.search(code):
        return SIDE, f"{name} code runs other programs", False
    return SIDE, f"{name} runs inline code"


def _interpreter(name, args, cmd):
    if not args and any(downloads(u) for u in cmd.upstream):
        return DESTRUCTIVE, f"pipes a download into {name}"
    if not operands(args) and cmd.upstream and not any(a in ("-c", "-e", "-m") for a in args):
        return SIDE, f"{name} runs a program read from its input", False
    if (inline := _code(name, args, cmd)) is not None and not (name == "perl" and "i" in short_flags(args)):
        return inline
    if args[:1] in (("--version",), ("-V",), ("-v",), ("--help",), ("-h",)):
        return SAFE, f"{name} {args[0]}"
    if len(args) >= 2 and args[0] == "-m" and args[1] in ("pip", "pip3"):
        return packages("pip", args[2:], cmd)
    if name == "perl" and "i" in short_flags(args):
        return _sed(name, ("-i",) + args, cmd)
    if args and args[0] in ("-m",) and len(args) > 1 and args[1] in ("http.server", "SimpleHTTPServer"):
        return SIDE, f"{name} -m {args[1]} starts a server"
    return SIDE, f"{name} runs a program"


def _shell(name, args, cmd):
    if any(downloads(u) for u in cmd.upstream) and (not operands(args) or "-s" in args):
        return DESTRUCTIVE, f"pipes a download into {name}"
    if any(p in ("curl", "wget", "fetch") for p in cmd.substituted):
        return DESTRUCTIVE, f"{name} runs a downloaded script"
    if any(a.startswith("-") and "c" in a[1:] and not a.startswith("--") for a in args):
        return SAFE, f"{name} -c runs the script it is given"
    if args[:1] in (("--version",),):
        return SAFE, f"{name} --version"
    if not operands(args) and cmd.stdin_text:
        return SAFE, f"{name} runs the here-document it is given"  # parsed and classed as its own commands
    if not operands(args) and cmd.upstream:
        return SIDE, f"{name} runs a script read from its input", False
    return SIDE, f"{name} runs a script"


def _source(name, args, cmd):
    if any(p in ("curl", "wget", "fetch") for p in cmd.substituted) or any(downloads(a) for a in args):
        return DESTRUCTIVE, f"{name} runs a downloaded script"
    return SIDE, f"{name} runs a script in the current shell"


_BY_PROGRAM: dict[str, Rule] = {
    "rm": _rm,
    "shred": _wipe,
    "wipefs": _wipe,
    "mkswap": _wipe,
    "fdisk": _wipe,
    "sfdisk": _wipe,
    "gdisk": _wipe,
    "sgdisk": _wipe,
    "parted": _wipe,
    "blkdiscard": _wipe,
    "mke2fs": _wipe,
    "dd": _dd,
    "truncate": _truncate,
    "mv": _writes_paths,
    "cp": _writes_paths,
    "ln": _writes_paths,
    "install": _writes_paths,
    "rsync": _writes_paths,
    "scp": _writes_paths,
    "touch": _writes_paths,
    "mkdir": _writes_paths,
    "tee": _writes_paths,
    "rmdir": _writes_paths,
    "unlink": _writes_paths,
    "patch": _writes_paths,
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "sed": _sed,
    "gsed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "nawk": _awk,
    "find": _find,
    "chmod": _chmod,
    "chown": _chmod,
    "chgrp": _chmod,
    "chattr": _chmod,
    "setfacl": _chmod,
    "source": _source,
    ".": _source,
    **SYSTEM_RULES,
    **DEVTOOL_RULES,
}
for _interp in _INTERPRETERS:
    _BY_PROGRAM[_interp] = _interpreter


def _by_prefix(name: str) -> Rule | None:
    if name.startswith("mkfs"):
        return _wipe
    if is_shell(name):
        return _shell
    if re.fullmatch(r"python3(\.\d+)?|pip3\.\d+", name):
        return _interpreter if name.startswith("python") else DEVTOOL_RULES["pip"]
    return None


__all__ = ["READ_ONLY", "command_verdict"]
