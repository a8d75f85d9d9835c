"""The base of every option type: a strict pydantic model (an unknown key is an
error, never silently ignored). Each backend owns the options it reads; the config
loader (`router.config`) composes them into the config file's sections."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
