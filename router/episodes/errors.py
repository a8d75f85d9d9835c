"""What a request about an episode can be refused with, on every front door."""

from __future__ import annotations


class EpisodeError(RuntimeError):
    """A request about an episode that cannot be served. `status`: the HTTP status it
    maps to (404 unknown, 409 ended or taken, 429 capacity, 422 a bad action)."""

    status = 400

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class EpisodeCapacityError(EpisodeError):
    status = 429
