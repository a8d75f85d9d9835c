"""Developer and operations tools in shell commands: databases, package managers,
git, containers, cloud and cluster CLIs, HTTP clients."""

from __future__ import annotations

import re

from policies.safety.shell_args import DESTRUCTIVE, SAFE, SIDE, Rule, operands, short_flags

_SQL_DESTRUCTIVE = re.compile(
    r"\b(drop\s+(table|database|schema|index|view|user|role|owned|collection)\b|truncate(\s+table)?\s+\w|flushall\b|flushdb\b|"
    r"dropdatabase\b|\.drop\s*\(|deletemany\b|\.remove\s*\(|delete\s+from\s+[\w.\"`]+\s*(;|$|\"|')|alter\s+table\s+\S+\s+drop\b)",
    re.IGNORECASE,
)
_SQL_WRITE = re.compile(
    r"\b(insert|update|delete|create|alter|grant|revoke|set|del|hset|lpush|rpush|expire|rename|insertone|insertmany|updateone|updatemany|copy|vacuum|reindex)\b",
    re.IGNORECASE,
)
_DB_CLIENTS = frozenset(
    "psql mysql mariadb sqlite3 mongo mongosh redis-cli cqlsh "
    "clickhouse-client clickhouse sqlcmd duckdb valkey-cli keydb-cli".split()
)


def _db(name, args, cmd):
    text = " ".join((*args, cmd.stdin_text, *cmd.upstream))
    if _SQL_DESTRUCTIVE.search(text):
        return DESTRUCTIVE, f"{name} drops, truncates, flushes or deletes data"
    query_flags = {"-c", "--command", "-e", "--execute", "--eval", "-f", "--file", "-q"}
    if name in ("redis-cli", "valkey-cli", "keydb-cli"):
        words = [a.upper() for a in operands(args)]
        reads = frozenset(
            "GET MGET KEYS SCAN INFO PING TTL TYPE EXISTS HGET HGETALL LRANGE SMEMBERS ZRANGE DBSIZE CONFIG CLIENT "
            "MONITOR STRLEN LLEN SCARD HKEYS".split()
        )
        if words and not any(w in reads for w in words[:1]) or not words:
            return SIDE, f"{name} may write data" if words else f"{name} reads commands from input"
        return SAFE, f"{name} {words[0]} reads"
    if _SQL_WRITE.search(text):
        return SIDE, f"{name} writes data"
    has_query = any(a in query_flags or a.startswith(("--command=", "--execute=", "--eval=")) for a in args) or (
        name == "sqlite3" and len(operands(args)) >= 2
    )
    if has_query and re.search(
        r"\b(select|show|describe|explain|\\d|\\l|\.tables|\.schema|find\s*\(|count)", text, re.IGNORECASE
    ):
        return SAFE, f"{name} runs a read-only query"
    return SIDE, f"{name} may write data"


def _packages(name, args, cmd):
    words = operands(args)
    verb = words[0] if words else ""
    removing = {"remove", "purge", "autoremove", "uninstall", "erase", "rm", "un", "unlink", "del", "r"}
    reading = frozenset(
        "list show search info freeze check policy depends "
        "rdepends ls outdated view help --version madison download".split()
    )
    if name == "dpkg":
        flags = short_flags(args)
        if "r" in flags or "P" in flags or "--purge" in args or "--remove" in args:
            return DESTRUCTIVE, "dpkg removes packages"
        return (
            (SAFE, "dpkg lists")
            if any(f in flags for f in "lLsS") or "--list" in args
            else (SIDE, "dpkg installs packages")
        )
    if name in ("rpm",):
        return (
            (DESTRUCTIVE, "rpm -e removes packages")
            if "e" in short_flags(args)
            else (SAFE, "rpm queries")
            if "q" in short_flags(args)
            else (SIDE, "rpm installs")
        )
    if name == "pacman":
        flags = short_flags(args)
        return (
            (DESTRUCTIVE, "pacman -R removes packages")
            if "R" in flags
            else (SAFE, "pacman queries")
            if "Q" in flags or "Ss" in "".join(args)
            else (SIDE, "pacman installs")
        )
    if name == "uv" and verb == "pip":
        return _packages("pip", tuple(words[1:]), cmd)
    if verb in removing or (name == "brew" and verb == "uninstall"):
        return DESTRUCTIVE, f"{name} {verb} removes packages"
    if verb in reading:
        return SAFE, f"{name} {verb} only reads"
    return SIDE, f"{name} {verb or ''} installs or changes packages".replace("  ", " ")


def _git(name, args, cmd):
    i = 0
    while i < len(args) and args[i].startswith("-"):  # git -C dir -c k=v --no-pager …
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args):
        return SAFE, "git without a subcommand"
    verb, rest = args[i], args[i + 1 :]
    flags = short_flags(rest)
    if verb == "push":
        if (
            "f" in flags
            or any(a.startswith(("--force", "--mirror", "--delete", "--prune")) for a in rest)
            or "d" in flags
            or any(a.startswith((":", "+")) for a in operands(rest))
        ):
            return DESTRUCTIVE, "git push that overwrites or deletes remote history: " + cmd.text()[:100]
        return SIDE, "git push publishes commits"
    if verb == "reset" and "--hard" in rest:
        return DESTRUCTIVE, "git reset --hard discards work"
    if verb == "clean":
        if "f" in flags or "--force" in rest:
            return (
                (SAFE, "git clean -n only lists")
                if "n" in flags or "--dry-run" in rest
                else (DESTRUCTIVE, "git clean -f deletes untracked files")
            )
        return SAFE, "git clean without -f deletes nothing"
    if (
        verb in ("filter-branch", "filter-repo", "replace")
        or (verb == "rebase" and "--abort" not in rest and "--continue" not in rest)
        or (verb == "commit" and "--amend" in rest)
    ):
        return DESTRUCTIVE, f"git {verb} rewrites history"
    if (
        verb == "reflog"
        and rest[:1] in (("expire",), ("delete",))
        or verb == "gc"
        and any(a.startswith("--prune") for a in rest)
        or verb == "update-ref"
        and "-d" in rest
    ):
        return DESTRUCTIVE, f"git {verb} deletes history"
    if verb == "branch" and ("D" in flags or "--delete" in rest and "--force" in rest):
        return DESTRUCTIVE, "git branch -D deletes unmerged branches"
    if verb in ("checkout", "restore") and (
        "f" in flags
        or "--force" in rest
        or "--" in rest
        or operands(rest)[:1] == ["."]
        or (verb == "restore" and "--staged" not in rest)
    ):
        return DESTRUCTIVE, f"git {verb} discards uncommitted changes"
    if verb == "stash" and rest[:1] in (("drop",), ("clear",)):
        return DESTRUCTIVE, f"git stash {rest[0]} deletes stashed work"
    if verb in _GIT_READ or (
        verb in ("branch", "tag", "remote", "stash", "config", "worktree", "notes", "submodule")
        and _git_lists(verb, rest)
    ):
        return SAFE, f"git {verb} only reads"
    return SIDE, f"git {verb} changes the repository"


_GIT_READ = frozenset(
    "status log diff show blame rev-parse ls-files ls-tree ls-remote grep describe shortlog reflog cat-file help "
    "version --version whatchanged show-ref rev-list name-rev for-each-ref count-objects fsck check-ignore "
    "bisect var diff-tree archive".split()
)


def _git_lists(verb: str, rest: tuple[str, ...]) -> bool:
    words = operands(rest)
    if verb in ("branch", "tag"):
        return not words or any(
            a in ("-l", "--list", "-a", "-r", "-v", "-vv", "--show-current", "--contains", "--merged") for a in rest
        )
    if verb == "remote":
        return not words or words[0] in ("show", "get-url", "-v")
    if verb == "stash":
        return words[:1] in (["list"], ["show"])
    if verb == "config":
        return any(a in ("--get", "--list", "-l", "--get-all", "--get-regexp") for a in rest) or len(words) == 1
    return words[:1] in (["list"], ["status"], ["show"])


def _containers(name, args, cmd):
    words = operands(args)
    verb = (
        " ".join(words[:2])
        if words[:1] in (["system"], ["volume"], ["image"], ["container"], ["network"], ["builder"], ["compose"])
        else (words[0] if words else "")
    )
    flags = short_flags(args)
    if verb.endswith("prune") or words[:1] == ["prune"]:
        return DESTRUCTIVE, f"{name} {verb} deletes unused data"
    if (verb in ("rm", "container rm", "rmi", "image rm") and ("f" in flags or "--force" in args)) or verb in (
        "volume rm",
        "system reset",
    ):
        return DESTRUCTIVE, f"{name} {verb} force-removes containers, images or volumes"
    if verb in ("compose down",) and ("v" in flags or "--volumes" in args):
        return DESTRUCTIVE, f"{name} compose down -v deletes volumes"
    if name == "docker-compose" and words[:1] == ["down"] and ("v" in flags or "--volumes" in args):
        return DESTRUCTIVE, "docker-compose down -v deletes volumes"
    if verb in (
        "ps",
        "images",
        "inspect",
        "logs",
        "version",
        "info",
        "top",
        "stats",
        "history",
        "port",
        "diff",
        "events",
        "search",
        "container ls",
        "image ls",
        "volume ls",
        "network ls",
        "compose ps",
        "compose logs",
        "container inspect",
        "image inspect",
        "volume inspect",
        "system df",
        "compose config",
        "ls",
    ):
        return SAFE, f"{name} {verb} only reads"
    return SIDE, f"{name} {verb} changes containers"


_CLOUD_DESTROY = re.compile(
    r"^(delete|destroy|remove|terminate|purge|drain|uninstall|deregister|rb|del|wipe|teardown|kill|down)", re.IGNORECASE
)
_CLOUD_READ = re.compile(
    r"^(get|describe|list|ls|show|logs|top|explain|version|plan|validate|output|status|history|search|whoami|info|auth|config|view|inspect|api-resources|cluster-info|diff|fmt|graph|providers|template|lint|env)$",
    re.IGNORECASE,
)


def _cloud(name, args, cmd):
    words = [w for w in operands(args) if "=" not in w]
    flags = short_flags(args)
    if name in ("terraform", "tofu", "terragrunt", "pulumi") and (
        "destroy" in words or "-destroy" in args or words[:2] == ["state", "rm"]
    ):
        return DESTRUCTIVE, f"{name} destroys infrastructure"
    if (
        name in ("aws", "gsutil", "s3cmd")
        and any(w in ("rm", "rb", "del") for w in words)
        and ("--recursive" in args or "r" in flags or "--force" in args)
    ):
        return DESTRUCTIVE, f"{name} deletes storage recursively"
    if name == "kubectl" and words[:1] and words[0] in ("scale",) and any(a.endswith("=0") for a in args):
        return DESTRUCTIVE, "kubectl scale to zero replicas"
    for word in words[:4]:
        if _CLOUD_DESTROY.match(word) and not (
            name in ("aws",) and word == "rm" and "--recursive" not in args and words[:1] == ["s3"]
        ):
            return DESTRUCTIVE, f"{name} {word} deletes cloud or cluster resources"
    if any(_CLOUD_READ.match(w) or w.startswith(("describe", "list", "get")) for w in words[:3]):
        return SAFE, f"{name} {' '.join(words[:2])} only reads"
    return SIDE, f"{name} {' '.join(words[:2])} changes cloud or cluster resources"


def _curl(name, args, cmd):
    method = None
    for i, arg in enumerate(args):
        if arg in ("-X", "--request") and i + 1 < len(args):
            method = args[i + 1].upper()
        elif arg.startswith("-X") and len(arg) > 2:
            method = arg[2:].upper()
    if method == "DELETE":
        return DESTRUCTIVE, f"{name} sends an HTTP DELETE"
    sends = any(a.startswith(("-d", "--data", "-F", "--form", "-T", "--upload-file", "--json")) for a in args) or (
        method not in (None, "GET", "HEAD", "OPTIONS")
    )
    if sends:
        return SIDE, f"{name} sends data"
    if name == "wget":
        if any(a.startswith(("--post", "--method")) for a in args):
            return SIDE, "wget sends data"
        stdout = (
            "--spider" in args
            or re.search(r"(^|\s)-\w*O\s*-(\s|$)|--output-document=?\s*-(\s|$)", " ".join(args)) is not None
        )
        return (SAFE, "wget prints to stdout") if stdout else (SIDE, "wget saves a file")
    if (
        "o" in short_flags(args)
        or "O" in short_flags(args)
        or any(a in ("--output", "--remote-name", "--remote-name-all") or a.startswith("--output=") for a in args)
    ):
        return SIDE, f"{name} saves a file"
    return SAFE, f"{name} fetches to stdout"


DEVTOOL_RULES: dict[str, Rule] = {
    "apt": _packages,
    "apt-get": _packages,
    "aptitude": _packages,
    "yum": _packages,
    "dnf": _packages,
    "zypper": _packages,
    "pip": _packages,
    "pip3": _packages,
    "pipx": _packages,
    "uv": _packages,
    "npm": _packages,
    "pnpm": _packages,
    "yarn": _packages,
    "gem": _packages,
    "cargo": _packages,
    "brew": _packages,
    "snap": _packages,
    "conda": _packages,
    "apk": _packages,
    "dpkg": _packages,
    "rpm": _packages,
    "pacman": _packages,
    "flatpak": _packages,
    "git": _git,
    "docker": _containers,
    "podman": _containers,
    "docker-compose": _containers,
    "nerdctl": _containers,
    "terraform": _cloud,
    "tofu": _cloud,
    "terragrunt": _cloud,
    "pulumi": _cloud,
    "kubectl": _cloud,
    "helm": _cloud,
    "oc": _cloud,
    "aws": _cloud,
    "gcloud": _cloud,
    "az": _cloud,
    "doctl": _cloud,
    "gsutil": _cloud,
    "s3cmd": _cloud,
    "eksctl": _cloud,
    "heroku": _cloud,
    "flyctl": _cloud,
    "curl": _curl,
    "wget": _curl,
    "dropdb": lambda n, a, c: (DESTRUCTIVE, "dropdb drops a database"),
    "mysqladmin": lambda n, a, c: (
        (DESTRUCTIVE, "mysqladmin drop drops a database") if "drop" in a else (SIDE, "mysqladmin administers a server")
    ),
    **{client: _db for client in _DB_CLIENTS},
}


def packages(name: str, args: tuple[str, ...], cmd) -> tuple:
    """A package manager's class (also reached through `python -m pip`)."""
    return _packages(name, args, cmd)
