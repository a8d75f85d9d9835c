"""The fuzz suites print their seed and the cases each surface ran (tests/kit/fuzz.py)."""

from kit.fuzz import CASES, report


def pytest_terminal_summary(terminalreporter):
    if CASES:
        terminalreporter.write_sep("-", "fuzz")
        terminalreporter.write_line(report())
