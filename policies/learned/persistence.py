"""Saving and loading learned models: skops (never pickle) plus a JSON model card.

The model file holds a plain mapping: a format tag, the hash width and, per
trained route, its `RouteClassifier` and threshold. Loading admits only the
types listed in `ALLOWED_TYPES` (skops refuses anything else in the file), then
derives the decision path's scorers. Any failure is a `ModelLoadError` that
says what is wrong with which file; the caller keeps its previous model.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from policies.errors import ModelLoadError
from policies.learned.model import LearnedModel, RouteModel
from policies.learned.scorer import LinearScorer

FORMAT = "simroute-learned/1"
# Beyond what skops trusts by default (numpy, builtins, most of scikit-learn).
ALLOWED_TYPES = frozenset(
    {
        "policies.learned.estimator.RouteClassifier",
        "sklearn.calibration._CalibratedClassifier",
        "sklearn.calibration._SigmoidCalibration",
    }
)


def card_path(model_path: Path) -> Path:
    return model_path.with_suffix(".card.json")


def save_model(
    path: Path, classifiers: dict[str, Any], thresholds: dict[str, float], *, n_bits: int, card: dict[str, Any]
) -> None:
    """Write the model and its card atomically (a watcher never sees half a file)."""
    import skops.io

    payload = {
        "format": FORMAT,
        "n_bits": n_bits,
        "routes": {r: {"classifier": c, "threshold": float(thresholds[r])} for r, c in classifiers.items()},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    data = skops.io.dumps(payload)
    card = {**card, "model_sha256": hashlib.sha256(data).hexdigest()}
    _write_atomic(card_path(path), json.dumps(card, indent=2).encode())
    _write_atomic(path, data)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_model(path: Path) -> LearnedModel:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelLoadError(f"cannot read learned model {path}: {exc.strerror or exc}") from exc
    return load_model_bytes(data, source=str(path), card=_read_card(path))


def load_model_bytes(data: bytes, *, source: str, card: dict[str, Any] | None = None) -> LearnedModel:
    import skops.io

    try:
        untrusted = skops.io.get_untrusted_types(data=data)
        refused = sorted(set(untrusted) - ALLOWED_TYPES)
        if refused:
            raise ModelLoadError(f"learned model {source} holds types simroute does not load: {', '.join(refused)}")
        payload = skops.io.loads(data, trusted=list(untrusted))
    except ModelLoadError:
        raise
    # Boundary: an untrusted file. skops raises many kinds for a damaged or foreign
    # file; each becomes a ModelLoadError that names the file.
    except Exception as exc:
        raise ModelLoadError(
            f"learned model {source} is not a readable skops file: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ModelLoadError(
            f"learned model {source} is not a simroute model (format "
            f"{payload.get('format') if isinstance(payload, dict) else type(payload).__name__!r}, "
            f"expected {FORMAT!r})"
        )
    routes = {}
    try:
        for route, entry in payload["routes"].items():
            if route not in ("sim", "replay"):
                raise ModelLoadError(f"learned model {source}: unknown route {route!r}")
            routes[route] = RouteModel(LinearScorer.from_classifier(entry["classifier"]), float(entry["threshold"]))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ModelLoadError(f"learned model {source} is incomplete: {type(exc).__name__}: {exc}") from exc
    return LearnedModel(routes, source=source, digest=hashlib.sha256(data).hexdigest()[:12], card=card or {})


def _read_card(path: Path) -> dict[str, Any]:
    try:
        return json.loads(card_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # the card is for people; a model without one still loads


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
