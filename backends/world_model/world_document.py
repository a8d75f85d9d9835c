"""A fictional world: one document every simulated server, host, shell and browser of
a session is told, so their answers agree with each other across channels.

The config's `world_model.world` is the world of every session; an episode's `world`
option extends it (its date wins, its facts are added to or replace the configured
ones by key, its text comes after) or, with `replace: true`, stands alone. The
rendered document is the `## World` block of each domain's system message.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from backends.options import Strict

# A world document is prompt text: bounded, so a stray file cannot fill the context.
MAX_WORLD_CHARS = 32_000


class WorldDocument(Strict):
    """A fictional world shared by every simulated channel of a session."""

    date: str | None = Field(
        default=None, description="The world's current date (and time), e.g. `2031-04-02 09:30 UTC`."
    )
    facts: dict[str, str] = Field(
        default={}, description="Named facts, e.g. `company: Lumen Freight`, `user 7: Ada Park (admin)`."
    )
    text: str = Field(default="", description="Free text: entities, a filesystem or an API described in prose.")
    file: str | None = Field(
        default=None,
        description=(
            "A text or markdown file read as the document's text (before `text`); relative to the config's folder."
        ),
    )
    replace: bool = Field(
        default=False, description="An episode's world: replace the configured world instead of extending it."
    )

    @field_validator("date", mode="before")
    @classmethod
    def _date_as_written(cls, value: Any) -> Any:
        """YAML reads `2031-04-02` as a date: the world keeps it as text."""
        return (
            value.isoformat(sep=" ")
            if isinstance(value, datetime.datetime)
            else value.isoformat()
            if isinstance(value, datetime.date)
            else value
        )

    @field_validator("facts", mode="before")
    @classmethod
    def _values_as_text(cls, value: Any) -> Any:
        """A fact's value written as a number, a date or a yes/no in YAML is its text."""
        if not isinstance(value, dict):
            return value
        return {key: _as_text(fact) for key, fact in value.items()}

    @field_validator("facts")
    @classmethod
    def _named(cls, facts: dict[str, str]) -> dict[str, str]:
        for key in facts:
            if not key.strip():
                raise ValueError("a fact needs a name")
        return facts

    def loaded(self, base_dir: Path) -> WorldDocument:
        """The document with its `file` read into its text. Raises ValueError naming the file."""
        if self.file is None:
            return self
        path = Path(self.file).expanduser()
        path = path if path.is_absolute() else base_dir / path
        try:
            body = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"world file {str(path)!r} cannot be read: {exc.strerror or exc}") from exc
        text = "\n\n".join(part.strip() for part in (body, self.text) if part.strip())
        return self.model_copy(update={"file": None, "text": text})

    def merged(self, episode: WorldDocument) -> WorldDocument:
        """This (configured) world with an episode's on top: see the module's docstring."""
        if episode.replace:
            return episode
        text = "\n\n".join(part.strip() for part in (self.text, episode.text) if part.strip())
        return WorldDocument(date=episode.date or self.date, facts={**self.facts, **episode.facts}, text=text)

    def render(self) -> str:
        """The document as the model reads it; "" when it says nothing."""
        lines = []
        if self.date:
            lines.append(f"Current date: {self.date.strip()}")
        lines += [f"- {key}: {value}" for key, value in self.facts.items()]
        if self.text.strip():
            lines.append(self.text.strip())
        rendered = "\n".join(lines)
        if len(rendered) > MAX_WORLD_CHARS:
            raise ValueError(
                f"the world document has {len(rendered)} characters; at most {MAX_WORLD_CHARS} fit a prompt"
            )
        return rendered


def _as_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, (int, float)):
        return str(value)
    return value


def world_document_of(value: str | WorldDocument | None) -> WorldDocument | None:
    """An episode's `world` option as a document (a string is its text)."""
    if value is None or isinstance(value, WorldDocument):
        return value
    return WorldDocument(text=value)
