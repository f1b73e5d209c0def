"""The effective configuration and where each value came from.

Layers, lowest first: the defaults (settings.Settings), the config file
`config.yaml` beside the state (in the agent's guard directory: for OpenClaw
<state directory>/skill-state/compaction-resilience-guard/),
the environment (GUARD_<NAME>, e.g. GUARD_MAX_INFLATION_RATIO, GUARD_PROVIDER), and
flags (--set NAME=VALUE, --provider, --model, ...). `--print-config` shows them all.

config.yaml holds settings by name, at the top level or grouped in sections of any
name (thresholds:, limits:, history:, ...), plus a `provider:` section with
provider, base_url, model, api_key_env, timeout. API keys never go in it: name the
variable that holds the key (api_key_env).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

from .errors import GuardError
from .settings import DEFAULT, Settings, effective_l2_temperature

CONFIG_NAME = "config.yaml"
PROVIDER_KEYS = ("provider", "base_url", "model", "api_key_env", "timeout")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}


def config_path(where) -> Path:
    """config.yaml of a layout (layout.Layout), or of an OpenClaw state directory."""
    guard_dir = getattr(where, "guard_dir", None)
    return (guard_dir if guard_dir is not None else Path(where) / "skill-state" / "compaction-resilience-guard") \
        / CONFIG_NAME


@dataclass
class Effective:
    settings: Settings
    provider_values: dict                 # from the config file's provider: section
    origins: dict = field(default_factory=dict)   # setting name -> "default" | "file" | "environment" | "flag"
    path: Optional[Path] = None


def _coerce(name: str, value, where: str):
    default = getattr(DEFAULT, name)
    kind = type(default)
    try:
        if kind is bool:
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            return float(value)
        return kind(value)
    except (TypeError, ValueError):
        raise GuardError(f"{where}: {name} = {value!r} is not a {kind.__name__}; give e.g. {name}: {default!r}") from None


def _flatten(path: Path, data: dict) -> tuple:
    settings, provider = {}, {}
    for key, value in data.items():
        if key == "provider" and isinstance(value, dict):
            for k, v in value.items():
                if k not in PROVIDER_KEYS:
                    raise GuardError(f"{path}: unknown provider setting {k!r}; use {', '.join(PROVIDER_KEYS)} "
                                     "(API keys go in an environment variable named by api_key_env)")
                provider[k] = v
        elif key == "provider":
            provider["provider"] = value
        elif isinstance(value, dict):
            sub_s, sub_p = _flatten(path, value)
            settings.update(sub_s)
            provider.update(sub_p)
        elif key in _FIELDS:
            settings[key] = value
        else:
            raise GuardError(f"{path}: unknown setting {key!r}; run --print-config to see the names")
    return settings, provider


def _read_file(path: Path) -> tuple:
    if not path.exists():
        return {}, {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GuardError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); fix or remove it") from None
    try:
        data = yaml.load(text, Loader=_LOADER) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise GuardError(f"{path}: not valid YAML{where}; fix it or remove it to use the defaults") from None
    if not isinstance(data, dict):
        raise GuardError(f"{path}: expected a mapping of settings (name: value); fix it or remove it")
    return _flatten(path, data)


def load(home, env=None, overrides: Optional[list] = None) -> Effective:
    """The effective settings: defaults < config.yaml < GUARD_* environment < --set flags."""
    env = os.environ if env is None else env
    path = config_path(home)
    file_settings, provider = _read_file(path)
    values, origins = {}, {}
    for name in _FIELDS:
        origins[name] = "default"
        if name in file_settings:
            values[name] = _coerce(name, file_settings[name], str(path))
            origins[name] = "file"
        env_name = f"GUARD_{name.upper()}"
        if env.get(env_name) not in (None, ""):
            values[name] = _coerce(name, env[env_name], f"environment {env_name}")
            origins[name] = "environment"
    for item in overrides or []:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or name not in _FIELDS:
            raise GuardError(f"--set {item!r}: write NAME=VALUE with a setting name; run --print-config to see them")
        values[name] = _coerce(name, raw.strip(), f"--set {name}")
        origins[name] = "flag"
    settings = dataclasses.replace(DEFAULT, **values)
    _validate(settings)
    return Effective(settings, provider, origins, path)


def _validate(s: Settings) -> None:
    for name in ("min_summary_chars", "loop_block_bytes", "loop_min_copies", "max_failures_kept",
                 "max_check_history", "breaker_threshold"):
        if getattr(s, name) < 1:
            raise GuardError(f"setting {name} = {getattr(s, name)} must be at least 1")
    if s.max_inflation_ratio <= 0:
        raise GuardError(f"setting max_inflation_ratio = {s.max_inflation_ratio} must be above 0")
    for name in ("telemetry_max_batch", "telemetry_max_events"):
        if getattr(s, name) < 1:
            raise GuardError(f"setting {name} = {getattr(s, name)} must be at least 1")
    for name in ("telemetry_timeout_seconds", "telemetry_deadline_seconds"):
        if not getattr(s, name) > 0:
            raise GuardError(f"setting {name} = {getattr(s, name)} must be above 0")
    if s.push_url and not s.push_url.lower().startswith(("http://", "https://")):
        raise GuardError(f"setting push_url = {s.push_url!r}: give the Pushgateway's URL, e.g. http://pushgateway:9091")


def describe(eff: Effective, choice, layout) -> dict:
    """Every effective value with its origin (for --print-config)."""
    from .state import state_path
    out = {"paths": {"agent": layout.agent, "agent_dir": str(layout.state_dir), "agent_dir_origin": layout.origin,
                     **({"agent_config": str(layout.config_path)} if getattr(layout, "config_path", None) else {}),
                     "state": str(state_path(layout)), "config": str(eff.path)}}
    out["settings"] = {name: {"value": getattr(eff.settings, name), "origin": eff.origins[name]} for name in _FIELDS}
    temp, why = effective_l2_temperature(eff.settings)
    if why:        # shown as it runs, with why, and where the value that is not used came from
        out["settings"]["l2_temperature"] = {"value": temp, "origin": f"{eff.origins['l2_temperature']}, clamped",
                                             "configured": eff.settings.l2_temperature, "note": why}
    origin = dict(choice.origin)
    out["provider"] = {k: {"value": getattr(choice, k), "origin": origin.get(k, "default")}
                       for k in PROVIDER_KEYS}
    if choice.note:
        out["provider"]["note"] = choice.note
    return out
