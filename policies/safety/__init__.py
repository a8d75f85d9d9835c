"""The safety gate's classifiers: every call is `safe`, `side_effect` or
`destructive` (or `unknown` when classification raised), with a reason."""

from policies.safety.classifier import SafetyClassifier, SafetySettings, ToolLookup, classify, no_tools
from policies.safety.verdict import SafetyClass, SafetyVerdict

__all__ = ["SafetyClass", "SafetyClassifier", "SafetySettings", "SafetyVerdict", "ToolLookup", "classify", "no_tools"]
