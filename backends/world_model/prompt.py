"""The message layout every domain shares, fitted to the model's context.

system  = the domain's simulation context
then    = (user action, assistant observation) per earlier step, oldest first
then    = examples: recorded real (action, observation) pairs from other sessions,
          best last, as turns right before the current action (small models answer
          in the format of the turn just before theirs; an example given inline in
          the last message they mostly ignore)
last    = the current action with the closing instruction

When the turns do not fit, the oldest go in chunks with a marker. A window
sliding by one turn would change the first history message at every step and
the model runner would re-read the whole history each time; omitting a multiple of a
chunk keeps the prefix byte-identical until the next chunk has to go.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

OMITTED = "[{count} earlier turns omitted]"
EXAMPLE_NOTE = "(A real {what} in another session, for reference.)\n"
MARKER = "**Environment Observation:**"
CLOSING = (
    "Think about what the real {what} would return for this action, then write the observation "
    "itself inside <predicted_observation></predicted_observation>, in the {what}'s native format."
)
# The closing instruction when the model runner pre-writes the observation marker (the llama
# model runner's `prefill_observation`): the model's answer starts after the marker, so it is
# asked for the observation there, not for tags it will not write.
PREFILLED_CLOSING = (
    "Write what the real {what} returns for this action: the "
    "observation itself, after {marker}, in the {what}'s native format."
)
OBSERVATION_PREFILL = MARKER + "\n"
_CLOSING_PATTERN = re.compile(
    re.escape(CLOSING).replace(re.escape("{what}"), "(?P<what>[^\n]+?)", 1).replace(re.escape("{what}"), "(?P=what)")
)


def agreeing_with(prefill: str, text: str) -> str:
    """`text` (a prompt's last message) with its closing instruction asking for what
    the model runner's generation writes: after `prefill` the observation itself, else (no
    prefill) the observation inside the tags the parser reads."""
    if not prefill:
        return text
    return _CLOSING_PATTERN.sub(lambda m: PREFILLED_CLOSING.format(what=m.group("what"), marker=MARKER), text)


_OMITTED_PATTERN = re.compile(re.escape(OMITTED).replace(re.escape("{count}"), r"\d+"))
_EXAMPLE_NOTE_START = EXAMPLE_NOTE.split("{what}")[0]

CountTokens = Callable[[str], int]
# (user text, assistant text) of turn `number` (1-based)
RenderTurn = Callable[[int, int], tuple[str, str]]
# the final user message for turn `number`
RenderFinal = Callable[[int], str]
# (user text, assistant text) of an example shown as turn `number`
RenderExample = Callable[[int], tuple[str, str]]


def best_last[T](scored: Iterable[tuple[float, T]], k: int) -> list[T]:
    """The `k` best of (score, candidate) pairs, best LAST (small models copy the
    nearest example); of equal scores the earlier candidate counts as better (record
    rows come newest first)."""
    if k <= 0:
        return []
    ranked = sorted(enumerate(scored), key=lambda item: (item[1][0], -item[0]))
    return [candidate for _, (_, candidate) in ranked[-k:]]


def is_demonstration(user_text: str) -> bool:
    """Whether a prompt's user turn introduces a demonstration (an example turn), not
    an earlier step of the session (an omission marker may come first)."""
    first, _, rest = user_text.partition("\n\n")
    if _OMITTED_PATTERN.fullmatch(first):
        user_text = rest
    return user_text.startswith(_EXAMPLE_NOTE_START)


def render_observation(observation: str) -> str:
    return f"{MARKER}\n{observation}"


def assemble(
    system: str,
    turns: int,
    render_turn: RenderTurn,
    render_final: RenderFinal,
    *,
    omitted: int,
    examples: Sequence[RenderExample] = (),
) -> list[dict[str, str]]:
    """Messages with the first `omitted` of `turns` earlier turns left out, then the
    examples (numbered on from the history), then the final action."""
    messages = [{"role": "system", "content": system}]
    pairs = [render_turn(index, index + 1) for index in range(omitted, turns)]
    pairs += [example(turns + 1 + i) for i, example in enumerate(examples)]
    final = render_final(turns + len(examples) + 1)
    if omitted:
        if pairs:
            pairs[0] = (OMITTED.format(count=omitted) + "\n\n" + pairs[0][0], pairs[0][1])
        else:
            final = OMITTED.format(count=omitted) + "\n\n" + final
    for user, assistant in pairs:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": assistant})
    messages.append({"role": "user", "content": final})
    return messages


def omit_oldest(
    system: str,
    turns: int,
    render_turn: RenderTurn,
    render_final: RenderFinal,
    *,
    budget_tokens: int,
    count_tokens: CountTokens,
    examples: Sequence[RenderExample] = (),
) -> tuple[list[dict[str, str]], int]:
    """The messages with as few oldest turns omitted as fit, rounded up to a chunk;
    and how many were omitted. May still exceed the budget with every turn gone."""

    def build(omitted: int) -> list[dict[str, str]]:
        return assemble(system, turns, render_turn, render_final, omitted=omitted, examples=examples)

    whole = build(0)
    total = size(whole, count_tokens)
    if total <= budget_tokens:
        return whole, 0
    # Linear in the history: every turn is measured once, then the oldest are taken
    # off until the rest fits (the omission marker's own size counted in).
    marker = count_tokens(OMITTED.format(count=turns)) + 2
    per_turn = [
        count_tokens(user) + count_tokens(assistant) + 16
        for user, assistant in (render_turn(i, i + 1) for i in range(turns))
    ]
    needed, remaining = turns, total + marker
    for index, cost in enumerate(per_turn):
        if remaining <= budget_tokens:
            needed = index
            break
        remaining -= cost
    chunk = _chunk(turns - needed)
    omitted = min(turns, -(-needed // chunk) * chunk)
    return build(omitted), omitted


def _chunk(kept_turns: int) -> int:
    """Turns dropped at once: half of what fits or a little less (a power of two,
    so it stays the same from step to step while turn sizes wobble)."""
    half = max(1, kept_turns // 2)
    return 1 << (half.bit_length() - 1)


def size(messages: Sequence[dict[str, str]], count_tokens: CountTokens) -> int:
    # A few tokens per message for the chat template's role markers.
    return sum(count_tokens(m["content"]) + 8 for m in messages)


def cut_to_fit(text: str, excess_tokens: int, count_tokens: CountTokens, *, what: str = "characters") -> str:
    """`text` shortened by about `excess_tokens`, with a marker saying how much went."""
    keep = max(0, len(text) - int(excess_tokens * len(text) / max(1, count_tokens(text))) - 64)
    return text[:keep] + f"\n[{len(text) - keep} {what} cut]"
