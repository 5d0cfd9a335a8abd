"""Simulator profiles: the YAML file that describes the simulated model and machine.

A profile is validated against SCHEMA before anything starts; a bad profile raises
ProfileError naming the field (``timing.decode_base_ms: must be >= 0, got -1``).
Every field has a default taken from the bundled default profile, so a profile file only
needs the fields it changes. The schema is documented in simulator/README.md.
"""

import os

import yaml

PROFILE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")
BUNDLED = ("default", "deterministic", "fast")


class ProfileError(ValueError):
    """A profile file is missing, unreadable or does not match the schema."""


def _num(minimum=None, maximum=None, integer=False):
    return {"kind": "int" if integer else "float", "min": minimum, "max": maximum}


# section -> field -> rule. "float" accepts ints too; "list" is a list of floats in [0, 1].
SCHEMA = {
    None: {
        "name": {"kind": "str"},
        "description": {"kind": "str"},
        "sglang_version": {"kind": "str"},
        "seed": {"kind": "int_or_null"},
    },
    "model": {
        "architecture": {"kind": "str"},
        "model_type": {"kind": "str"},
        "context_length": _num(1, None, True),
        "vocab_size": _num(1, None, True),
        "weights_gib": _num(0.0),
        "draft_weights_gib": _num(0.0),
        "kv_bytes_per_token": _num(1.0),
        "state_mib_per_request": _num(0.0),
        "state_mib_per_draft_token": _num(0.0),
        "mamba_full_memory_ratio": _num(0.0, 100.0),
        "natural_output_median": _num(1.0),
        "natural_output_sigma": _num(0.0, 5.0),
        "chars_per_token": _num(0.5, 64.0),
    },
    "hardware": {
        "gpu_name": {"kind": "str"},
        "gpu_count": _num(1, 1024, True),
        "gpu_memory_gib": _num(0.5),
        "runtime_overhead_gib": _num(0.0),
    },
    "memory": {
        "default_mem_fraction_static": _num(0.05, 0.99),
        "default_cuda_graph_max_bs": _num(1, 4096, True),
        "spec_buffer_mib_per_graph_token": _num(0.0),
        "cuda_graph_base_mib": _num(0.0),
        "cuda_graph_mib_per_graph_token": _num(0.0),
        "activation_reserve_gib": _num(0.0),
    },
    "timing": {
        "load_time_s": _num(0.0, 86400.0),
        "warmup_s": _num(0.0, 3600.0),
        "sigterm_poll_s": _num(0.01, 60.0),
        "decode_base_ms": _num(0.001),
        "draft_step_ms": _num(0.0),
        "verify_token_ms": _num(0.0),
        "request_ms": _num(0.0),
        "prefill_base_ms": _num(0.0),
        "prefill_token_ms": _num(0.0),
        "jitter": _num(0.0, 0.5),
    },
    # Fault injection, not a model of SGLang: a configuration that crashes under load as SGLang does.
    "faults": {
        "crash_at_running_requests": _num(0, None, True),
        "crash_min_steps": _num(0, None, True),
        "occupied_gpu_gib": _num(0.0),
        "start_failure_min_steps": _num(0, None, True),
        "start_hang_min_steps": _num(0, None, True),
    },
    "acceptance": {
        "greedy": {"kind": "list"},
        "sampled": {"kind": "list"},
        "tail_decay": _num(0.0, 1.0),
        "deterministic": {"kind": "bool"},
    },
}


def _check(path, rule, value):
    kind = rule["kind"]
    if kind == "str":
        if not isinstance(value, str) or not value:
            raise ProfileError("%s: must be a non-empty string, got %r" % (path, value))
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ProfileError("%s: must be true or false, got %r" % (path, value))
        return value
    if kind == "int_or_null":
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileError("%s: must be an integer or null, got %r" % (path, value))
        return value
    if kind == "list":
        if not isinstance(value, list) or not value:
            raise ProfileError("%s: must be a non-empty list of probabilities in [0, 1], got %r" % (path, value))
        out = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (int, float)) or not 0.0 <= item <= 1.0:
                raise ProfileError("%s[%d]: must be a probability in [0, 1], got %r" % (path, i, item))
            out.append(float(item))
        return out
    # numbers
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError("%s: must be a number, got %r" % (path, value))
    if kind == "int" and not isinstance(value, int):
        raise ProfileError("%s: must be an integer, got %r" % (path, value))
    if rule["min"] is not None and value < rule["min"]:
        raise ProfileError("%s: must be >= %s, got %r" % (path, rule["min"], value))
    if rule["max"] is not None and value > rule["max"]:
        raise ProfileError("%s: must be <= %s, got %r" % (path, rule["max"], value))
    return int(value) if kind == "int" else float(value)


def validate(data, base=None):
    """Validate a profile mapping and merge it over ``base`` (a validated profile or None)."""
    if not isinstance(data, dict):
        raise ProfileError("profile: must be a YAML mapping, got %s" % type(data).__name__)
    out = {}
    if base is not None:
        out = {key: (dict(val) if isinstance(val, dict) else val) for key, val in base.items()}
    for key, value in data.items():
        if key in SCHEMA and key is not None:
            if not isinstance(value, dict):
                raise ProfileError("%s: must be a mapping, got %r" % (key, value))
            section = out.setdefault(key, {})
            for field, fvalue in value.items():
                if field not in SCHEMA[key]:
                    raise ProfileError("%s.%s: unknown field (allowed: %s)" % (key, field, ", ".join(sorted(SCHEMA[key]))))
                section[field] = _check("%s.%s" % (key, field), SCHEMA[key][field], fvalue)
        elif key in SCHEMA[None]:
            out[key] = _check(key, SCHEMA[None][key], value)
        else:
            allowed = sorted(list(SCHEMA[None]) + [k for k in SCHEMA if k is not None])
            raise ProfileError("%s: unknown field (allowed: %s)" % (key, ", ".join(allowed)))
    if base is None:
        # the bundled default must be complete
        for section, fields in SCHEMA.items():
            holder = out if section is None else out.get(section, {})
            for field in fields:
                if field not in holder and field not in ("description", "seed"):
                    raise ProfileError("%s: required field missing" % (field if section is None else section + "." + field))
    out.setdefault("seed", None)
    out.setdefault("description", "")
    return out


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except OSError as exc:
        raise ProfileError("profile %s: cannot read: %s" % (path, exc.strerror))
    except yaml.YAMLError as exc:
        raise ProfileError("profile %s: not valid YAML: %s" % (path, exc))


_DEFAULT_CACHE = {}


def default_profile():
    if "default" not in _DEFAULT_CACHE:
        _DEFAULT_CACHE["default"] = validate(_read(os.path.join(PROFILE_DIR, "default.yaml")))
    return _DEFAULT_CACHE["default"]


def load_profile(path=None):
    """Load a profile: None = bundled default, a bundled name, or a YAML file path.

    Files are merged over the default profile, so they only need the fields they change.
    """
    base = default_profile()
    if path is None or path == "default":
        return base
    if path in BUNDLED and not os.path.exists(path):
        path = os.path.join(PROFILE_DIR, path + ".yaml")
    data = _read(path)
    if data is None:
        data = {}
    try:
        return validate(data, base)
    except ProfileError as exc:
        raise ProfileError("profile %s: %s" % (path, exc))
