"""A pending call's record as stored: its call and answers redacted (a shadow side known
already included), the replay key and occurrence it was claimed under, what a
perturbation kept, who wrote it."""

from __future__ import annotations

import time

from calls import Observation
from records.record import Record
from router.engine.parts import EngineParts
from router.engine.pending import Pending


def record_of(engine: EngineParts, pending: Pending, observation: Observation, note: str, *, status: str) -> Record:
    unperturbed, shadow, redactor = pending.unperturbed, pending.shadow, engine.redactor
    if redactor is not None:
        observation = redactor.observation(observation, session_id=pending.call.session_id)
        if unperturbed is not None:
            unperturbed = redactor.observation(unperturbed, session_id=pending.call.session_id)
        if shadow is not None:
            shadow = redactor.observation(shadow, session_id=pending.call.session_id)
    return Record(
        call=pending.stored_call,
        decision=pending.decision,
        served=observation,
        step=pending.step,
        call_key=pending.keys.exact,
        id=pending.record_id,
        ts=pending.ts,
        note=note,
        status=status,
        occurrence=pending.occurrence,
        replay_key=pending.keys.replay,
        key_scheme=engine.replay.scheme,
        recording=setup.record_as
        if (setup := pending.session.episode) is not None and setup.record_as
        else engine.replay_modes.recording,
        owner=engine.owner,
        reads_only=pending.reads_only(),
        ended=None if status == "started" else time.time(),
        perturbation=pending.perturbation.meta() if pending.perturbation is not None else None,
        unperturbed=unperturbed,
        shadow=shadow,
    )
