"""What a refused episode request raises, in-process and remote alike: one class per
answer of the episodes API, each carrying the HTTP status and the server's message,
so training code can catch capacity (429) apart from a mistake in its requests."""

from __future__ import annotations


class EpisodeError(RuntimeError):
    """simroute refused an episode request. `status`: the HTTP status of the refusal
    (the REST front door's; the same number in-process); `message`: simroute's explanation."""

    status = 400

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __str__(self) -> str:
        return f"{self.message} (HTTP {self.status})"


class InvalidRequestError(EpisodeError):
    """A bad action, bad reset options, or an episode that cannot be scored (422)."""

    status = 422


class EpisodeNotFoundError(EpisodeError):
    """No such episode for this token: never reset, or closed and forgotten (404)."""

    status = 404


class EpisodeConflictError(EpisodeError):
    """The episode has ended (closed or reaped), or its id is taken (409)."""

    status = 409


class CapacityError(EpisodeError):
    """Too many episodes are open (`episodes.max_open_per_token`, `sessions.max_open`):
    close one and reset again (429). The server refuses rather than queues."""

    status = 429


_BY_STATUS: dict[int, type[EpisodeError]] = {
    cls.status: cls for cls in (InvalidRequestError, EpisodeNotFoundError, EpisodeConflictError, CapacityError)
}


def episode_error(status: int, message: str) -> EpisodeError:
    """The exception for a refusal with this status (the base class for others: 400, 401…)."""
    return _BY_STATUS.get(status, EpisodeError)(message, status)
