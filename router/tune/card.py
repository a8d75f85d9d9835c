"""A tuning run's model card: `card.json` (for tools) and `MODEL_CARD.md` (for people),
in the run's folder. What the candidate was made from (the base model and its sha256,
the data: its source, counts, split and filters), how (the hyper-parameters), and how
it compares with the base on the held-out sessions: with the world-state layer off and
end to end, overall and on the calls the base model got wrong and right. The figures
stay empty (null, `—`) until the candidate is evaluated."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from router.tune.settings import TuneSettings

CARD_JSON, CARD_MD = "card.json", "MODEL_CARD.md"
# Each figure for the base model and the candidate, measured by `compare-models` on the same held-out calls.
FIGURES = (
    "fidelity",  # 1 − the mean divergence from the real answers
    "fidelity_where_base_wrong",  # on the calls the base model's answer diverged (a hard case)
    "fidelity_where_base_right",
    "real_vs_real_floor",  # two real answers to the same call, in different sessions
    "judge_score",  # when a judge is configured
    "well_formed_rate",
    "latency_p50_s",
    "answered_without_model",  # end to end: the share the world state or an aligned recording answered
)
SETTINGS = ("state_layer_off", "end_to_end")


def sha256_of(path: Path) -> str | None:
    """The file's SHA-256 (None: no such file)."""
    try:
        with path.open("rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except FileNotFoundError:
        return None


def empty_evaluation() -> dict[str, Any]:
    return {
        "held_out": {"sessions": None, "calls": None},
        **{setting: {figure: {"base": None, "candidate": None} for figure in FIGURES} for setting in SETTINGS},
    }


def model_card(
    *, dataset: dict[str, Any], settings: TuneSettings, base_model: Path, version: str, created: str
) -> dict[str, Any]:
    """The card of a run whose data is ready: no candidate and no figures yet."""
    counts = dataset["counts"]
    lines = next(iter(counts["lines"].values()))
    return {
        "simroute_version": version,
        "created": created,
        "status": "data",  # data → trained → evaluated → adopted (→ reverted, → adopted again)
        "base_model": {"file": base_model.name, "path": str(base_model), "sha256": sha256_of(base_model)},
        "candidate": {"kind": settings.output, "file": None, "sha256": None},
        "data": {
            "source": dataset["source"],
            **({"copied_from": dataset["copied_from"]} if "copied_from" in dataset else {}),
            "files": dataset["files"],
            "records_read": counts["records_read"],
            "examples": {side: lines[side] for side in ("train", "test")},
            "split": dataset["split"],
            "filters": {key: value for key, value in dataset["filters"].items() if value not in (None, [])},
            "order": dataset["order"]["by"],
            "target": dataset["generation"],
            "examples_by_domain": counts["examples_by_domain"],
            "duplicates_collapsed": counts["duplicates_collapsed"],
        },
        "hyperparameters": settings.describe(),
        "evaluation": empty_evaluation(),
        "adoption": {"margin": settings.margin, "adopted": None, "previous": None, "reverted": None},
    }


def write_card(card: dict[str, Any], out: Path) -> None:
    (out / CARD_JSON).write_text(json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / CARD_MD).write_text(markdown(card), encoding="utf-8")


def markdown(card: dict[str, Any]) -> str:
    base, data, hyper = card["base_model"], card["data"], card["hyperparameters"]
    split = data["split"]
    out = [
        f"# World model candidate: {card['candidate']['kind']} of {base['file']}",
        "",
        f"Made by simroute {card['simroute_version']} on {card['created']}; status: **{card['status']}**.",
        "",
        "## Base model",
        "",
        f"- file: `{base['path']}`",
        f"- sha256: `{base['sha256'] or 'not found'}`",
        "",
        "## Data",
        "",
        f"- source: {_inline(data.get('copied_from') or data['source'])}",
        f"- records read: {data['records_read']}; examples: {data['examples']['train']} train, "
        f"{data['examples']['test']} test ({data['duplicates_collapsed']} duplicates collapsed)",
        f"- split by session (seed {split['seed']}, test fraction {split['test_fraction']}): "
        f"{split['sessions']['train']} train sessions, {split['sessions']['test']} test sessions",
        f"- filters: {_inline(data['filters']) if data['filters'] else 'none'}; order: {data['order']}",
        f"- target: {data['target']['target']}",
        "",
        "## Hyper-parameters",
        "",
        "| name | value |",
        "| --- | --- |",
        *(f"| {name} | {_inline(value)} |" for name, value in hyper.items()),
        "",
        *_training(card),
        "## Evaluation on the held-out sessions",
        "",
        *_held_out(card["evaluation"]),
        "| figure | state layer off: base | candidate | end to end: base | candidate |",
        "| --- | --- | --- | --- | --- |",
    ]
    evaluation = card["evaluation"]
    for figure in FIGURES:
        cells = [_figure(evaluation[setting][figure][who]) for setting in SETTINGS for who in ("base", "candidate")]
        out.append(f"| {figure.replace('_', ' ')} | {' | '.join(cells)} |")
    adoption = card["adoption"]
    out += [
        "",
        "## Adoption",
        "",
        f"Adopted when the candidate's held-out fidelity beats the base's by {adoption['margin']} or more, "
        f"or on `--adopt`; adopted: {adoption['adopted'] or 'no'}"
        + (f"; reverted: {adoption['reverted']}." if adoption.get("reverted") else "."),
        "",
    ]
    return "\n".join(out)


def _training(card: dict[str, Any]) -> list[str]:
    """The candidate and how its training went; nothing before it is trained."""
    training, candidate = card.get("training"), card["candidate"]
    if not training:
        return []
    examples = training["examples"]
    return [
        "## Training",
        "",
        f"- candidate: `{candidate['file']}`, sha256 `{candidate['sha256']}`",
        f"- device: {training['device']}; examples trained on: {examples['trained']} of {examples['read']} "
        f"({examples['truncated']} fitted to the token limit by leaving out earlier turns or cutting the prompt's "
        f"start, {examples['skipped']} skipped: "
        f"their target alone did not fit), {examples['target_tokens']} target tokens",
        "",
        "| epoch | seconds | tokens | tokens/s | mean loss |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {e['epoch']} | {e['seconds']} | {e['tokens']} | {e['tokens_per_s']} | {e['mean_loss']} |"
            for e in training["epochs"]
        ),
        "",
    ]


def _held_out(evaluation: dict[str, Any]) -> list[str]:
    held = evaluation["held_out"]
    if held["calls"] is None:
        return []
    same = " (the world-state layer is off in the config: end to end is the same run)"
    note = same if evaluation.get("end_to_end_same_as_state_layer_off") else ""
    judge = evaluation.get("judge")
    judged = f"; the judge: {judge['model']} (`simroute judge`'s prompt)" if judge else "; no judge (`--judge URL`)"
    return [f"{held['calls']} calls of {held['sessions']} sessions, greedy sampling{judged}{note}.", ""]


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _inline(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`" if isinstance(value, dict | list) else str(value)
