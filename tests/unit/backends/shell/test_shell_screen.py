"""Shell results as the agent sees them: bounded capture and screen trimming."""

from backends.shell.screen import BoundedCapture, ShellResult, trim_screen


def test_bounded_capture_keeps_head_and_tail_and_counts_the_rest():
    capture = BoundedCapture(head=4, tail=6)
    for chunk in (b"abcdef", b"ghij", b"klmnop"):
        capture.feed(chunk)
    text, dropped = capture.text()
    assert dropped and text.startswith("abcd") and text.endswith("klmnop") and "6 bytes of output omitted" in text
    small = BoundedCapture(head=4, tail=6)
    small.feed(b"abc")
    assert small.text() == ("abc", False)


def test_bounded_capture_never_splits_into_invalid_text():
    # "ab€cd€ef": the head's limit falls inside the first €, the tail's inside the second.
    capture = BoundedCapture(head=3, tail=4)
    capture.feed("ab€cd€ef".encode())
    text, dropped = capture.text()
    # The split characters are left out and counted, never shown as replacement marks.
    assert dropped and text == "ab\n[... 8 bytes of output omitted ...]\nef"
    # Whole characters at the edges are kept; a 4-byte one cut in its middle is left out.
    for sample, head, tail, expected in (
        ("é€xé", 2, 4, "é\n[... 3 bytes of output omitted ...]\nxé"),
        ("x😀y😀", 3, 3, "x\n[... 9 bytes of output omitted ...]\n"),
    ):
        capture = BoundedCapture(head=head, tail=tail)
        capture.feed(sample.encode())
        assert capture.text() == (expected, True), sample
    # Output that is not UTF-8 at all (a binary file) is shown with replacement marks, never raised.
    binary = BoundedCapture(head=8, tail=8)
    binary.feed(b"\xff\xfe")
    assert binary.text() == ("\ufffd\ufffd", False)


def test_trim_screen_keeps_a_quarter_from_the_top():
    text = "\n".join(str(i) for i in range(1, 101))
    trimmed, cut = trim_screen(text, max_lines=20, max_chars=10_000)
    lines = trimmed.split("\n")
    assert cut and lines[:5] == ["1", "2", "3", "4", "5"] and lines[-1] == "100" and "80 lines omitted" in lines[5]
    assert trim_screen("short", max_lines=20, max_chars=100) == ("short", False)
    long_line, cut = trim_screen("x" * 1000, max_lines=20, max_chars=100)
    assert cut and len(long_line) < 200 and "characters omitted" in long_line


def test_result_text_and_structure_round_trip():
    result = ShellResult("hi\n", 0, "/workspace")
    assert result.text() == "hi\n[exit code 0, cwd /workspace]" and not result.is_error
    unknown = ShellResult("", None, None, timed_out=True, error="stopped")
    assert unknown.is_error and "exit code unknown" in unknown.text() and "timed out" in unknown.text()
    assert ShellResult("x", 1, "/tmp").is_error is False  # the command's failure is its answer
    assert ShellResult.from_structured(result.structured()) == result
