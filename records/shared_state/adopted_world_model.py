"""The adopted world model: the candidate `simroute tune --adopt` made running routers
use (a LoRA adapter of the configured model, or a merged model), and the adoptions
before it, so `--revert` can go back.

`AdoptedWorldModel` is the protocol. One router (the embedded store) keeps it in a
folder beside the store (`records.adopted/`: `current.json` and the adopted files,
named by digest), which the running router polls. With a Redis store
(adopted_world_model_redis.py) the record and the file's bytes are in Redis and each
change is announced: every replica writes the bytes to a cache file and loads it.
The swap itself is router/runtime/world_model_adoption.py's.

Every adoption and revert is also appended to a history (`history`, the newest
`HISTORY_KEPT`), each entry whole (the adoption's card figures copied in), so the
dashboard can show a model's history after its run folder is gone.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

Kind = Literal["adapter", "merged"]
HISTORY_KEPT = 50  # history entries kept, newest last


class NothingAdopted(Exception):
    """`--revert` with no adoption in place."""


@dataclass(frozen=True, slots=True)
class Adoption:
    digest: str  # the file's sha256
    kind: Kind  # an adapter of the configured model, or a merged model in its place
    file: str  # the candidate's file name in its run (adapter.gguf, model.gguf)
    run: str  # the run's folder it came from
    adopted_at: str  # ISO 8601, UTC
    previous: Adoption | None = None  # what --revert restores (None: the config's own model)
    # The run's model card headline, copied at adoption (the run folder may be gone later):
    # held-out fidelity and well-formed rate, base and candidate, with the state layer off.
    figures: dict[str, Any] | None = None

    @property
    def cached_name(self) -> str:
        """The file's name where routers load it from: named by its digest, so the model
        an answer names (`model.gguf+adapter-1a2b3c4d5e6f.gguf`) says which adoption."""
        stem, dot, suffix = self.file.rpartition(".")
        return f"{stem or suffix}-{self.digest[:12]}{dot}{suffix if stem else ''}"

    def describe(self) -> dict[str, Any]:
        """The adoption without its chain (a model card's `previous`)."""
        return {key: value for key, value in asdict(self).items() if key != "previous"}

    def to_json(self) -> dict[str, Any]:
        return {**self.describe(), "previous": self.previous.to_json() if self.previous else None}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Adoption | None:
        if not data:
            return None
        return cls(**{**data, "previous": cls.from_json(data.get("previous"))})


class AdoptedWorldModel(Protocol):
    # Where adoptions are kept, for the logs.
    name: str

    async def adopt(self, adoption: Adoption, data: bytes) -> Adoption:
        """Make `adoption` (its file's bytes: `data`) the current one; returns it with the
        adoption it replaces as its `previous`."""

    async def revert(self) -> Adoption | None:
        """Restore the adoption before the current one (None: the config's own model);
        raises NothingAdopted when none is in place."""

    async def version(self) -> str | None:
        """Changes with every adoption and revert (None: never adopted)."""

    async def current(self) -> Adoption | None: ...

    async def history(self) -> list[dict[str, Any]]:
        """The adoptions and reverts, oldest first (the newest HISTORY_KEPT): entries of
        `adopted_entry` and `reverted_entry`."""

    async def file(self, adoption: Adoption) -> Path:
        """A local file holding the adopted file's bytes, for the model runner to load."""

    async def follow(self, check: Callable[[], Awaitable[object]], *, poll_s: float) -> None:
        """Call `check` whenever the adoption may have changed, until cancelled."""


class LocalAdoptedWorldModel:
    """One router: the record and the adopted files in a folder beside the store."""

    name = "file"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @property
    def _record(self) -> Path:
        return self.folder / "current.json"

    async def adopt(self, adoption: Adoption, data: bytes) -> Adoption:
        adoption = Adoption(**{**adoption.describe(), "previous": await self.current()})
        await asyncio.to_thread(self._write_file, adoption.cached_name, data)
        await asyncio.to_thread(self._write_record, adoption)
        await asyncio.to_thread(self._append_history, adopted_entry(adoption))
        return adoption

    async def revert(self) -> Adoption | None:
        current = await self.current()
        if current is None:
            raise NothingAdopted("no adopted world model to revert: routers use the config's own")
        await asyncio.to_thread(self._write_record, current.previous)
        await asyncio.to_thread(self._append_history, reverted_entry(current))
        return current.previous

    async def version(self) -> str | None:
        record = await asyncio.to_thread(self._read_record)
        return record.get("version") if record else None

    async def current(self) -> Adoption | None:
        record = await asyncio.to_thread(self._read_record)
        return Adoption.from_json(record.get("adoption")) if record else None

    async def history(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._read_history)

    async def file(self, adoption: Adoption) -> Path:
        return self.folder / adoption.cached_name

    async def follow(self, check: Callable[[], Awaitable[object]], *, poll_s: float) -> None:
        while True:  # a file has nothing to announce: read every poll_s
            await check()
            await asyncio.sleep(poll_s)

    def _read_record(self) -> dict[str, Any] | None:
        try:
            record: dict[str, Any] = json.loads(self._record.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return record

    def _write_record(self, adoption: Adoption | None) -> None:
        record = {"version": uuid.uuid4().hex, "adoption": adoption.to_json() if adoption else None}
        write_atomically(self._record, json.dumps(record, indent=2).encode())

    def _read_history(self) -> list[dict[str, Any]]:
        try:
            lines = (self.folder / "history.jsonl").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()][-HISTORY_KEPT:]

    def _append_history(self, entry: dict[str, Any]) -> None:
        # Rewritten whole (at most HISTORY_KEPT short lines): bounded, and never half written.
        entries = [*self._read_history(), entry][-HISTORY_KEPT:]
        text = "".join(json.dumps(e) + "\n" for e in entries)
        write_atomically(self.folder / "history.jsonl", text.encode())

    def _write_file(self, name: str, data: bytes) -> None:
        if not (self.folder / name).exists():
            write_atomically(self.folder / name, data)


def adopted_entry(adoption: Adoption) -> dict[str, Any]:
    """A history entry: `adoption` made current (its card figures with it)."""
    return {"event": "adopted", "at": adoption.adopted_at, **adoption.describe(), "model": adoption.cached_name}


def reverted_entry(reverted: Adoption) -> dict[str, Any]:
    """A history entry: `reverted` undone, its previous adoption restored (None: the config's own model)."""
    restored = reverted.previous
    return {
        "event": "reverted",
        "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "digest": reverted.digest,
        "file": reverted.file,
        "model": reverted.cached_name,
        "run": reverted.run,
        "restored": {**restored.describe(), "model": restored.cached_name} if restored else None,
    }


def write_atomically(path: Path, data: bytes) -> None:
    """A reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    partial.write_bytes(data)
    os.replace(partial, path)
