"""A training line as token ids and labels, with a character tokenizer and a ChatML-like
template standing in for the real ones (no torch, no model): the prompt is exactly what
the model runner sends (the template's generation prompt, then the prefill), the labels
cover the target and the turn's end only, an example too long loses its earliest turns
(then the start of its prompt) and never its target, and the epochs' order is the seed's."""

from __future__ import annotations

import json

import pytest

from backends.world_model.prompt import EXAMPLE_NOTE
from router.tune.examples import (
    IGNORED,
    TokenizedExample,
    batches,
    epoch_order,
    padded,
    prompt_and_target,
    tokenized,
    tokenized_file,
)

PREFILL = "**Obs:**\n"


class CharTokenizer:
    """One id per character; `<e>` (the turn's end) is one token, id 1."""

    eos_token = "<e>"

    def apply_chat_template(self, conversation, *, tokenize=False, add_generation_prompt=False):
        assert not tokenize
        text = "".join(f"[{m['role']}]{m['content']}<e>\n" for m in conversation)
        return text + ("[assistant]" if add_generation_prompt else "")

    def encode(self, text, add_special_tokens=True):
        assert not add_special_tokens  # the template already wrote what the model reads
        ids, i = [], 0
        while i < len(text):
            if text.startswith("<e>", i):
                ids.append(1)
                i += 3
            else:
                ids.append(ord(text[i]) + 10)
                i += 1
        return ids


def line(target: str = "sunny", history: str = "forecast?") -> dict:
    return {
        "messages": [
            {"role": "system", "content": "sim"},
            {"role": "user", "content": history},
            {"role": "assistant", "content": target, "weight": 1},
        ],
        "meta": {"prefill": PREFILL},
    }


def test_the_prompt_is_the_served_one_and_the_target_ends_the_turn():
    prompt, target = prompt_and_target(line(), CharTokenizer())
    assert prompt == "[system]sim<e>\n[user]forecast?<e>\n[assistant]" + PREFILL
    assert target == "sunny<e>"  # the turn's end is learned too: the model runner stops there


def test_the_loss_is_on_the_target_only():
    tokenizer = CharTokenizer()
    example, fate = tokenized(line(), tokenizer, max_tokens=512)
    assert fate == "" and example is not None
    prompt = len(tokenizer.encode(prompt_and_target(line(), tokenizer)[0], add_special_tokens=False))
    assert example.labels[:prompt] == [IGNORED] * prompt
    assert example.labels[prompt:] == tokenizer.encode("sunny<e>", add_special_tokens=False)
    assert example.input_ids[prompt:] == example.labels[prompt:]
    assert example.target_tokens == 6


def test_a_long_example_loses_the_start_of_its_prompt_and_a_long_target_is_skipped():
    tokenizer = CharTokenizer()
    example, fate = tokenized(line(history="x" * 100), tokenizer, max_tokens=40)
    assert fate == "truncated" and example is not None and len(example.input_ids) == 40
    assert example.target_tokens == 6 and example.input_ids[-6:] == tokenizer.encode(
        "sunny<e>", add_special_tokens=False
    )
    skipped, fate = tokenized(line(target="y" * 40), tokenizer, max_tokens=40)
    assert skipped is None and fate == "skipped"


def conversation(*turns: tuple[str, str], action: str = "now?", system: str = "sim") -> dict:
    messages = [{"role": "system", "content": system}]
    for said, seen in turns:
        messages += [{"role": "user", "content": said}, {"role": "assistant", "content": seen}]
    messages += [{"role": "user", "content": action}, {"role": "assistant", "content": "sunny"}]
    return {"messages": messages, "meta": {"prefill": PREFILL}}


def test_a_long_session_loses_its_earliest_turns_whole_and_keeps_the_system_prompt():
    tokenizer = CharTokenizer()
    long = conversation(("a" * 30, "A" * 30), ("b?", "B"), ("c?", "C"))
    example, fate = tokenized(long, tokenizer, max_tokens=130)
    assert fate == "truncated" and example is not None
    shown = "".join(chr(i - 10) if i != 1 else "<e>" for i in example.input_ids)
    # The first turn went whole, marked; the system prompt and the later turns stayed, as served.
    assert shown.startswith("[system]sim<e>\n[user][1 earlier turns omitted]\n\nb?<e>\n")
    assert "aaa" not in shown and "A" not in shown
    assert shown.endswith("[user]now?<e>\n[assistant]" + PREFILL + "sunny<e>")
    # Only a system prompt that does not fit beside the last action loses its start.
    example, fate = tokenized(conversation(("b?", "B"), system="s" * 100), tokenizer, max_tokens=60)
    assert fate == "truncated" and example is not None and len(example.input_ids) == 60
    shown = "".join(chr(i - 10) if i != 1 else "<e>" for i in example.input_ids)
    assert "b?" not in shown and shown.endswith(
        "[1 earlier turns omitted]\n\nnow?<e>\n[assistant]" + PREFILL + "sunny<e>"
    )


def test_the_demonstrations_stay_when_the_session_loses_its_earliest_turns():
    tokenizer = CharTokenizer()
    demonstration = (EXAMPLE_NOTE.format(what="result") + "d?", "D" * 10)
    long = conversation(("a" * 30, "A" * 30), ("b?", "B"), demonstration)
    example, fate = tokenized(long, tokenizer, max_tokens=190)
    assert fate == "truncated" and example is not None
    shown = "".join(chr(i - 10) if i != 1 else "<e>" for i in example.input_ids)
    assert "aaa" not in shown and "b?" in shown and "D" * 10 in shown
    # Every session turn gone and still too long: the demonstration is not taken for a
    # turn of the session (the start of the prompt is cut, the demonstration's end kept).
    example, fate = tokenized(long, tokenizer, max_tokens=158)
    shown = "".join(chr(i - 10) if i != 1 else "<e>" for i in example.input_ids)
    assert fate == "truncated" and "[2 earlier turns omitted]" in shown and "D" * 10 in shown
    assert "[3 earlier turns omitted]" not in shown


def test_a_line_without_an_assistant_target_is_refused():
    bad = line()
    bad["messages"] = bad["messages"][:2]
    with pytest.raises(ValueError, match="assistant"):
        prompt_and_target(bad, CharTokenizer())


def test_a_file_is_counted(tmp_path):
    path = tmp_path / "train.jsonl"
    rows = [line(), line(history="x" * 100), line(target="y" * 60), line(target="rain")]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + "\n")
    examples, counts = tokenized_file(path, CharTokenizer(), max_tokens=64)
    assert len(examples) == 3
    assert counts.describe() == {
        "read": 4,
        "trained": 3,
        "truncated": 1,
        "skipped": 1,
        "tokens": sum(len(e.input_ids) for e in examples),
        "target_tokens": 6 + 6 + 5,
        "longest": 64,
    }


def test_the_order_is_the_seed_and_the_epoch_alone():
    assert epoch_order(50, 7, 1) == epoch_order(50, 7, 1)  # a resumed run sees the same order
    assert epoch_order(50, 7, 1) != epoch_order(50, 7, 2) and epoch_order(50, 7, 1) != epoch_order(50, 8, 1)
    assert sorted(epoch_order(50, 7, 1)) == list(range(50))


def test_batches_are_padded_on_the_right_with_ignored_labels():
    examples = [TokenizedExample([5, 6, 7], [IGNORED, 6, 7]), TokenizedExample([8], [8])]
    assert [len(b) for b in batches(examples * 3, range(6), 4)] == [4, 2]
    ids, labels, mask = padded(examples, pad_id=0)
    assert ids == [[5, 6, 7], [8, 0, 0]]
    assert labels == [[IGNORED, 6, 7], [8, IGNORED, IGNORED]]
    assert mask == [[1, 1, 1], [1, 0, 0]]
