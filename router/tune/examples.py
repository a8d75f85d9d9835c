"""A training line as token ids and labels: the prompt exactly as the in-process model
runner sends it (the chat template with the generation prompt, then the prefilled
observation marker), then the target (the real observation and the turn's end). The
loss is on the target only: the prompt's labels are `IGNORED`, as the model never
writes them. Pure (no torch): any tokenizer with a chat template will do.

An example longer than `max_tokens` keeps its target whole and loses its session's
earliest turns, whole, until it fits, as the served prompt loses them: the system
prompt (the task, the tools), the recorded demonstrations the served prompt grounds
the model in and the latest turns stay, so the model learns to answer from what the
served prompt shows it. Only when
the system prompt and the last action alone do not fit is the start of the prompt cut.
One whose target alone would not fit is skipped. Both are counted, for the model card."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from backends.world_model.prompt import OMITTED, is_demonstration

IGNORED = -100  # the label cross-entropy skips (PyTorch's ignore_index)
_MIN_PROMPT = 8  # a target needs some prompt before it to be worth training on


class ChatTokenizer(Protocol):
    eos_token: str | None

    def apply_chat_template(self, conversation: list[dict[str, str]], **options: Any) -> Any: ...

    def encode(self, text: str, **options: Any) -> list[int]: ...


@dataclass(frozen=True, slots=True)
class TokenizedExample:
    input_ids: list[int]
    labels: list[int]  # IGNORED on the prompt, the token itself on the target

    @property
    def target_tokens(self) -> int:
        return sum(label != IGNORED for label in self.labels)


@dataclass(slots=True)
class ExampleCounts:
    read: int = 0
    trained: int = 0
    truncated: int = 0  # the start of the prompt cut to fit max_tokens
    skipped: int = 0  # the target alone did not fit
    tokens: int = 0
    target_tokens: int = 0
    longest: int = 0

    def describe(self) -> dict[str, int]:
        return {
            "read": self.read,
            "trained": self.trained,
            "truncated": self.truncated,
            "skipped": self.skipped,
            "tokens": self.tokens,
            "target_tokens": self.target_tokens,
            "longest": self.longest,
        }


def prompt_and_target(line: dict[str, Any], tokenizer: ChatTokenizer) -> tuple[str, str]:
    """The served prompt's text (up to and with the prefill) and the text the model
    should write after it: the target and what closes the assistant turn."""
    messages = [{"role": m["role"], "content": m["content"]} for m in line["messages"]]
    *context, last = messages
    if last["role"] != "assistant":
        raise ValueError("the last message of a training line is the assistant's target")
    prefill = (line.get("meta") or {}).get("prefill") or ""
    prompt = tokenizer.apply_chat_template(context, tokenize=False, add_generation_prompt=True) + prefill
    # The whole conversation rendered: what follows the target there closes the turn (`<|im_end|>`).
    whole = tokenizer.apply_chat_template(
        [*context, {"role": "assistant", "content": prefill + last["content"]}], tokenize=False
    )
    if whole.startswith(prompt + last["content"]):
        return prompt, whole[len(prompt) :].rstrip("\n")
    return prompt, last["content"] + (tokenizer.eos_token or "")


def tokenized(line: dict[str, Any], tokenizer: ChatTokenizer, max_tokens: int) -> tuple[TokenizedExample | None, str]:
    """The line as ids and labels, and what was done to fit it: "" (as is), "truncated"
    or "skipped" (then no example)."""
    prompt, target = prompt_and_target(line, tokenizer)
    # Tokenized apart, as served: the runner tokenizes the prompt, then the model writes the target's tokens.
    prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
    target_ids = tokenizer.encode(target, add_special_tokens=False)
    if not target_ids or len(target_ids) + _MIN_PROMPT > max_tokens:
        return None, "skipped"
    fate = ""
    room = max_tokens - len(target_ids)
    if len(prompt_ids) > room and _history_turns(line):
        prompt_ids, fate = _fewest_turns_left_out(line, tokenizer, room), "truncated"
    if len(prompt_ids) > room:
        prompt_ids, fate = prompt_ids[len(prompt_ids) - room :], "truncated"
    return TokenizedExample(prompt_ids + target_ids, [IGNORED] * len(prompt_ids) + target_ids), fate


def _fewest_turns_left_out(line: dict[str, Any], tokenizer: ChatTokenizer, room: int) -> list[int]:
    """The prompt's ids with as few of the earliest turns left out as fit in `room`
    (every one, if none does): a bisection, as leaving out more never lengthens it."""

    def prompt_ids(count: int) -> list[int]:
        prompt, _ = prompt_and_target(_without_earliest_turns(line, count), tokenizer)
        return tokenizer.encode(prompt, add_special_tokens=False)

    low, high = 1, _history_turns(line)  # the fewest that fit is within; all of them if none fits
    while low < high:
        middle = (low + high) // 2
        if len(prompt_ids(middle)) <= room:
            high = middle
        else:
            low = middle + 1
    return prompt_ids(low)


def _history_turns(line: dict[str, Any]) -> int:
    """The session's earlier turns (an action and its observation each) the line shows
    before its demonstrations and its action: those a prompt leaves out, oldest first."""
    messages = line["messages"]
    first = _after_system(messages)
    pairs = messages[first:-2:2]  # the user message of each earlier turn and demonstration
    return next((index for index, user in enumerate(pairs) if is_demonstration(user["content"])), len(pairs))


def _without_earliest_turns(line: dict[str, Any], count: int) -> dict[str, Any]:
    """The line with its first `count` turns left out and marked, as the served prompt
    leaves them out when they do not fit (backends/world_model/prompt.py)."""
    messages = line["messages"]
    first = _after_system(messages)
    kept = [dict(message) for message in messages[first + 2 * count :]]
    kept[0]["content"] = OMITTED.format(count=count) + "\n\n" + kept[0]["content"]
    return {**line, "messages": messages[:first] + kept}


def _after_system(messages: list[dict[str, Any]]) -> int:
    """The index of the first message after the system prompt."""
    return 1 if messages and messages[0]["role"] == "system" else 0


def tokenized_file(
    path: Path, tokenizer: ChatTokenizer, max_tokens: int
) -> tuple[list[TokenizedExample], ExampleCounts]:
    counts = ExampleCounts()
    examples = []
    for line in _lines(path):
        counts.read += 1
        example, fate = tokenized(line, tokenizer, max_tokens)
        if example is None:
            counts.skipped += 1
            continue
        counts.truncated += fate == "truncated"
        counts.trained += 1
        counts.tokens += len(example.input_ids)
        counts.target_tokens += example.target_tokens
        counts.longest = max(counts.longest, len(example.input_ids))
        examples.append(example)
    return examples, counts


def epoch_order(count: int, seed: int, epoch: int) -> list[int]:
    """The examples' order in `epoch`: shuffled by the run's seed and the epoch alone, so a
    resumed run sees the order the interrupted one would have."""
    order = list(range(count))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return order


def batches(examples: list[TokenizedExample], order: Iterable[int], size: int) -> Iterator[list[TokenizedExample]]:
    """`examples` in `order`, `size` at a time (the last batch may be smaller)."""
    batch: list[TokenizedExample] = []
    for index in order:
        batch.append(examples[index])
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def padded(batch: list[TokenizedExample], pad_id: int) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Ids, labels and attention masks of `batch`, padded on the right to its longest."""
    width = max(len(example.input_ids) for example in batch)
    ids, labels, mask = [], [], []
    for example in batch:
        pad = width - len(example.input_ids)
        ids.append(example.input_ids + [pad_id] * pad)
        labels.append(example.labels + [IGNORED] * pad)
        mask.append([1] * len(example.input_ids) + [0] * pad)
    return ids, labels, mask


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as file:
        for line in file:
            if line.strip():
                yield json.loads(line)
