"""What the policy chooses between: three ways to read the whole catalogue.

- `ignore_cursor`: one request; whatever the first page holds is the answer.
- `follow_cursor`: request pages while the answer names a `next_cursor`; a refusal
  (429, 503) ends the crawl with what it has.
- `follow_and_honour`: the same, but a refusal with `Retry-After` is waited out and the
  page asked again (at most `RETRIES` times).

Each gets `get(url)` (one request, an `Answer`) and `sleep(seconds)`: on the real side a
real wait, on a replayed or simulated one a virtual clock (what the wait would be is
counted, not slept: training on recordings runs at the speed of the loop).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from episodes import Answer

RETRIES = 2  # a page is asked at most three times: the recording holds three answers of each
Get = Callable[[str], Answer]
Sleep = Callable[[float], None]


def _items(answer: Answer) -> list[int]:
    body = answer.body if isinstance(answer.body, dict) else {}
    return [item["id"] for item in body.get("items", []) if isinstance(item, dict) and "id" in item]


def _next_url(base: str, answer: Answer) -> str | None:
    cursor = answer.body.get("next_cursor") if isinstance(answer.body, dict) else None
    return f"{base}/items?cursor={quote(cursor)}" if isinstance(cursor, str) and cursor else None


def ignore_cursor(base: str, get: Get, sleep: Sleep) -> set[int]:
    answer = get(f"{base}/items")
    return set(_items(answer)) if answer.status == 200 else set()


def follow_cursor(base: str, get: Get, sleep: Sleep) -> set[int]:
    seen: set[int] = set()
    url: str | None = f"{base}/items"
    while url is not None:
        answer = get(url)
        if answer.status != 200:
            break
        seen.update(_items(answer))
        url = _next_url(base, answer)
    return seen


def follow_and_honour(base: str, get: Get, sleep: Sleep) -> set[int]:
    seen: set[int] = set()
    url: str | None = f"{base}/items"
    while url is not None:
        answer = get(url)
        for _ in range(RETRIES):
            wait = answer.header("retry-after")
            if answer.status not in (429, 503) or wait is None or not wait.isdigit():
                break
            sleep(float(wait))
            answer = get(url)
        if answer.status != 200:
            break
        seen.update(_items(answer))
        url = _next_url(base, answer)
    return seen


STRATEGIES: dict[str, Callable[[str, Get, Sleep], set[int]]] = {
    "ignore the cursor": ignore_cursor,
    "follow the cursor": follow_cursor,
    "follow it, honour Retry-After": follow_and_honour,
}
