"""Latency of the safety classifier, per call, by channel.

Shell command lines go through the tree-sitter-bash parser: a short one and one
of about 2,000 characters, each repeated (its parse cached, as for an agent
that repeats itself) and each new every time (a cache miss). MCP and HTTP calls
are classed from tool names and annotations, and method, host, path.

Baseline, interleaved in the same run: a pattern-only scan of the same call
(the destructive raw-text regexes over the call's JSON), what a gateway that
only pattern-matches does. The ratio says what parsing costs over it.

Usage: python benchmarks/safety_latency.py [--iterations 5000] [--smoke]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics

from _results import add_smoke_flag, row, write_results
from _timing import paired_timings

from calls import Call
from policies.safety import SafetyClassifier, SafetySettings
from policies.safety.shell import classify_shell
from policies.safety.shell_parse import parse_shell
from policies.safety.shell_raw import raw_destructive

SHORT = "cd /workspace/app && git status --short | grep -v '^??' | head -20"


def long_command() -> str:
    steps = [
        "set -euo pipefail",
        'export APP_ENV=staging LOG_LEVEL="${LOG_LEVEL:-info}"',
        "cd /workspace/app",
        'for f in $(git ls-files \'*.py\' | grep -v tests/); do python3 -m py_compile "$f" || echo "bad: $f" >> '
        "compile.log; done",
        "find . -name '*.pyc' -newer setup.cfg -print | sort | uniq -c | sort -rn | head -50 > pyc.txt",
        "cat requirements.txt | grep -v '^#' | cut -d= -f1 | xargs -n1 pip show 2>/dev/null | grep -E "
        "'^(Name|Version):' | paste - - | column -t",
        "if [ -f docker-compose.yml ]; then docker compose config --services | while read -r s; do docker compose "
        'ps "$s"; done; fi',
        "awk -F, 'NR>1 {sum[$1]+=$3} END {for (k in sum) printf \"%s "
        "%d\\n\", k, sum[k]}' data/sales.csv | sort -k2 -nr | head",
        "curl -fsS -H 'Accept: application/json' \"https://api.example.com/v1/status?env=$APP_ENV\" | jq -r "
        "'.services[] | select(.ok == false) | .name'",
        "tar -tzf dist/app-$(cat VERSION).tar.gz | grep -c '\\.py$'",
        'printf "%s\\n" "done at $(date -u +%FT%TZ)" | tee -a build.log',
    ]
    text = "\n".join(steps)
    while len(text) < 2000:
        text += f"\nsed -n '{len(text) % 97},+3p' logs/app.log | grep -i -E 'error|warn' | wc -l"
    return text[:2000].rsplit("\n", 1)[0] + "\necho ok"


def shell(command: str) -> Call:
    return Call("shell", "shell", "shell_exec", {"command": command}, "bench")


def unique(command: str):
    """A new command line every time (same shape), so every parse misses the cache."""
    for n in itertools.count():
        yield shell(f"{command} # {n}")


TOOLS = {
    ("github", "create_pull_request"): {
        "name": "create_pull_request",
        "description": "Create a new pull request",
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    }
}


def cases():
    mcp = Call(
        "mcp",
        "github",
        "create_pull_request",
        {"owner": "o", "repo": "r", "title": "Fix", "head": "fix", "base": "main"},
        "bench",
    )
    http = Call(
        "http",
        "api.example.com",
        "POST",
        {
            "method": "POST",
            "url": "https://api.example.com/v1/charges",
            "path": "/v1/charges",
            "query": {},
            "headers": {"content-type": "application/json"},
            "body": {"amount": 500, "currency": "usd"},
        },
        "bench",
    )
    long = long_command()
    return {
        f"shell short ({len(SHORT)} chars), repeated": itertools.repeat(shell(SHORT)),
        f"shell short ({len(SHORT)} chars), new each time": unique(SHORT),
        f"shell long ({len(long)} chars), repeated": itertools.repeat(shell(long)),
        f"shell long ({len(long)} chars), new each time": unique(long),
        "mcp tool call": itertools.repeat(mcp),
        "http POST": itertools.repeat(http),
    }


def pattern_scan(call: Call) -> object:
    return raw_destructive(json.dumps(call.arguments))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5000)
    add_smoke_flag(parser)
    options = parser.parse_args()
    warmup = 200
    if options.smoke:
        options.iterations, warmup = 50, 10
    classifier = SafetyClassifier(SafetySettings(), lambda server, tool: TOOLS.get((server, tool)))
    print(f"{options.iterations} classifications per case, interleaved with a pattern-only scan of the same call\n")
    print(f"{'case':44} {'class':12} {'p50 us':>8} {'p99 us':>8} {'scan p50':>9} {'ratio':>7}")
    rows = []
    for label, calls in cases().items():
        parse_shell.cache_clear()
        classify_shell.cache_clear()
        measured, baseline = paired_timings(
            calls, classifier.classify, pattern_scan, iterations=options.iterations, warmup=warmup
        )
        verdict = classifier.classify(next(calls))
        q = statistics.quantiles(measured, n=100)
        p50, base = statistics.median(measured), statistics.median(baseline)
        print(f"{label:44} {verdict.cls:12} {p50:8.1f} {q[98]:8.1f} {base:9.1f} {p50 / base:6.2f}x")
        scan = "a pattern-only scan of the same call, interleaved"
        rows.append(row(f"classification p50, {label}", p50, "us", better="lower"))
        rows.append(row(f"classification p99, {label}", q[98], "us", better="lower"))
        rows.append(row(f"pattern-only scan p50, {label}", base, "us", better="lower"))
        rows.append(
            row(f"classification / pattern scan at p50, {label}", p50 / base, "ratio", baseline=scan, better="lower")
        )
    if not options.smoke:
        write_results(__file__, "Safety classifier latency per call, by channel", rows)


if __name__ == "__main__":
    main()
