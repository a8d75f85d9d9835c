"""The safety gate's classifiers: every call is `safe`, `side_effect` or
`destructive` (or `unknown` when classification raised), with a reason.

Shell command lines: `shell.py` classifies a line; `shell_parse.py` walks its
tree-sitter parse into `shell_commands.py`'s simple commands, unwrapping what
`shell_wrappers.py` knows runs other commands; `shell_programs.py` classes one
command (with `shell_system.py` and `shell_devtools.py` by program family, on
`shell_args.py`'s argument helpers); `shell_raw.py` holds the raw-text patterns
for what the parser cannot analyse."""

from policies.safety.classifier import SafetyClassifier, SafetySettings, ToolLookup, classify, no_tools
from policies.safety.verdict import SafetyClass, SafetyVerdict

__all__ = ["SafetyClass", "SafetyClassifier", "SafetySettings", "SafetyVerdict", "ToolLookup", "classify", "no_tools"]
