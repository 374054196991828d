"""The report line: a dict of fields -> one JSON line the agent's parser accepts.

Pure: no sockets, clocks or environment. The agent parses each line with protobuf's JSON
mapping of dlaunch.v1.WorkerReport (proto/report.proto) and drops the whole line on any error,
so the fields it knows are coerced to their types here, non-finite floats are written the way
protobuf reads them ("NaN", "Infinity"), and everything else becomes plain JSON.
"""

import json
import math

# WorkerReport's fields, by the JSON type protobuf expects. lowerCamelCase spellings are
# accepted by the agent too; they are folded into snake_case so that a field cannot appear twice.
_INT_FIELDS = frozenset(("rank", "step", "epoch", "samples", "checkpoint_step", "total_steps"))
_FLOAT_FIELDS = frozenset(("interval_s", "loss", "accuracy", "test_accuracy", "samples_per_sec"))
_STR_FIELDS = frozenset(("message",))
_TIMING_FIELDS = frozenset(("data_ms", "forward_ms", "backward_ms", "comm_wait_ms", "optimizer_ms"))
_KINDS = frozenset(("STEP", "EPOCH", "FINAL", "PHASE"))
_CAMEL = {
    "checkpointStep": "checkpoint_step",
    "totalSteps": "total_steps",
    "intervalS": "interval_s",
    "testAccuracy": "test_accuracy",
    "samplesPerSec": "samples_per_sec",
}

# WorkerReport.Phase, by the names a script would use for them. Other names travel only as
# phase_name; the agent then keeps the rank's previous phase.
PHASE_ENUM = {}
for _enum, _names in (
    ("LOADING_DATA", ("data", "data_loading", "loading", "loading_data", "load", "dataloader")),
    ("TRAINING", ("train", "training", "fit")),
    ("EVALUATING", ("eval", "evaluate", "evaluation", "evaluating", "validation", "validate",
                    "val", "test", "testing", "predict")),
    ("CHECKPOINTING", ("checkpoint", "checkpointing", "ckpt", "save", "saving")),
):
    for _n in _names:
        PHASE_ENUM[_n] = _enum
del _enum, _names, _n


def phase_enum(name):
    """WorkerReport.Phase's name for a phase called `name`, or None when it has none."""
    return PHASE_ENUM.get(str(name).strip().lower().replace("-", "_").replace(" ", "_"))


def _scalar(value):
    # Tensors and NumPy scalars: their Python number. Only called on reports that are sent, so
    # a script without dlaunch never pays for a device synchronisation here.
    item = getattr(value, "item", None)
    if item is not None and not isinstance(value, (int, float, str, bool)):
        try:
            return item()
        except Exception:  # a tensor of several elements, or a broken object
            return value
    return value


def _float(value):
    v = float(_scalar(value))
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def _int(value):
    v = _scalar(value)
    if isinstance(v, str):
        v = float(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("not finite")
    return int(v)


def _json_value(value, depth=0):
    """Any value as plain JSON that never makes the line unreadable."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _float(value)
    if depth < 8:
        if isinstance(value, dict):
            return {str(k): _json_value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [_json_value(v, depth + 1) for v in value]
    v = _scalar(value)
    if v is not value:
        return _json_value(v, depth + 1)
    return str(value)


def normalize(fields):
    """The fields as the agent will read them; a known field of a wrong type is dropped (with
    its name in `dropped_fields`) rather than losing the whole line."""
    out = {}
    bad = []
    for key, value in fields.items():
        if value is None:
            continue
        key = _CAMEL.get(key, key)
        try:
            if key in _INT_FIELDS:
                out[key] = _int(value)
            elif key in _FLOAT_FIELDS:
                out[key] = _float(value)
            elif key in _STR_FIELDS:
                out[key] = str(value)
            elif key == "kind":
                kind = str(value).upper()
                if kind not in _KINDS:
                    raise ValueError(kind)
                out[key] = kind
            elif key == "phase":
                # The enum's own name, or a script's name for it.
                enum = str(value).upper()
                if enum not in PHASE_ENUM.values():
                    enum = phase_enum(value)
                if enum is None:
                    out["phase_name"] = str(value)
                else:
                    out[key] = enum
            elif key == "timings":
                out[key] = {k: _float(v) for k, v in dict(value).items() if k in _TIMING_FIELDS}
            else:
                out[str(key)] = _json_value(value)
        except (TypeError, ValueError, OverflowError):
            bad.append(str(key))
    if bad:
        out["dropped_fields"] = bad
    return out


def encode(fields):
    """One report line, newline included, as bytes."""
    return (json.dumps(normalize(fields), separators=(",", ":"), allow_nan=False) + "\n").encode()
