"""Which summarizer L1 and L2 use, and where that choice came from.

Order: flags (--provider, --base-url, --model, --api-key-env, --timeout), then the
environment (GUARD_PROVIDER, GUARD_BASE_URL, GUARD_MODEL, GUARD_API_KEY_ENV,
GUARD_TIMEOUT), then the agent's own compaction model from its configuration when the
guard can reach it (agents/<name>: OpenClaw's openclaw.json), else the embedded extractive
summarizer. A key is read at call time and never stored or printed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from .errors import GuardError

PROVIDERS = ("openai", "anthropic", "local", "extractive")

DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_URL = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


@dataclass
class ProviderChoice:
    provider: str
    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key_env: Optional[str] = None
    timeout: float = 60.0
    origin: dict = field(default_factory=dict)     # field -> "flag" | "environment" | "openclaw.json" | "default"
    note: Optional[str] = None
    _literal_key: Optional[str] = field(default=None, repr=False)   # openclaw.json apiKey, never printed

    def describe(self) -> str:
        if self.provider == "extractive":
            return "extractive (embedded, no model)"
        where = f" at {self.base_url}" if self.base_url and self.provider != "local" else ""
        return f"{self.provider} {self.model or ''}{where}".strip()

    def to_dict(self) -> dict:
        return {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                "api_key_env": self.api_key_env, "timeout": self.timeout, "origin": self.origin, "note": self.note}

    def api_key(self, env=None) -> Optional[str]:
        env = os.environ if env is None else env
        if self.api_key_env and env.get(self.api_key_env):
            return env[self.api_key_env]
        return self._literal_key


def resolve(flags: dict, layout, env=None, file_values: Optional[dict] = None) -> ProviderChoice:
    """The provider to use. `flags`: provider, base_url, model, api_key_env, timeout (None = not given);
    then the environment (GUARD_*), then `file_values` (config.yaml's provider: section), then
    the agent's own compaction model (the `layout`'s agent: Agent.compaction_model)."""
    env = os.environ if env is None else env
    file_values = file_values or {}
    origin = {}

    def pick(name, env_name):
        if flags.get(name) is not None:
            origin[name] = "flag"
            return flags[name]
        if env.get(env_name):
            origin[name] = "environment"
            return env[env_name]
        if file_values.get(name) is not None:
            origin[name] = "file"
            return file_values[name]
        return None

    provider = pick("provider", "GUARD_PROVIDER")
    model = pick("model", "GUARD_MODEL")
    base_url = pick("base_url", "GUARD_BASE_URL")
    key_env = pick("api_key_env", "GUARD_API_KEY_ENV")
    timeout_raw = pick("timeout", "GUARD_TIMEOUT")
    try:
        timeout = float(timeout_raw) if timeout_raw is not None else 60.0
    except ValueError:
        raise GuardError(f"GUARD_TIMEOUT={timeout_raw!r} is not a number of seconds; set it like GUARD_TIMEOUT=60") from None
    if timeout <= 0:
        raise GuardError(f"--timeout {timeout:g}: give a positive number of seconds")
    origin.setdefault("timeout", "default")
    if isinstance(provider, str):
        provider = provider.strip()
    if provider is None and (model or base_url):
        provider = "openai"
        origin["provider"] = "default (a model or base URL was given)"
    if provider is None:
        from .agents import layout_of, of_layout
        layout = layout_of(layout)
        chosen = of_layout(layout).compaction_model(layout, env)
        if chosen is not None:
            chosen.timeout = timeout
            return chosen
        return ProviderChoice("extractive", timeout=timeout, origin={"provider": "default"})
    provider = provider.lower()
    if provider not in PROVIDERS:
        raise GuardError(f"unknown provider {provider!r}; use one of: {', '.join(PROVIDERS)}")
    if provider in ("openai", "anthropic"):
        if not base_url:
            base_url = DEFAULT_URL[provider]
            origin["base_url"] = "default"
        if not model:
            raise GuardError(f"provider {provider} needs a model: add --model NAME or set GUARD_MODEL")
        if not key_env:
            key_env = DEFAULT_KEY_ENV[provider]
            origin["api_key_env"] = "default"
    if provider == "local":
        model = model or "smollm2-135m-instruct"
        if origin.get("timeout") == "default":
            # a small model on a CPU answers a compaction prompt in tens of seconds: the chain's
            # deadline (chain_deadline_seconds) bounds it, not a per-call minute
            timeout = 300.0
    return ProviderChoice(provider, model, base_url.rstrip("/") if base_url else None, key_env, timeout, origin)


def points_at_guard(base_url: Optional[str], timeout: float = 1.0) -> bool:
    """Whether `base_url` is a running compaction-guard serve (its /healthz says so): a chain
    that called it would compact through its own proxy."""
    import urllib.parse
    if not base_url:
        return False
    u = urllib.parse.urlsplit(base_url)
    if (u.hostname or "") not in ("127.0.0.1", "localhost", "::1") and not (u.hostname or "").startswith("127."):
        return False
    root = f"{u.scheme}://{u.netloc}"
    try:
        import httpx
        r = httpx.get(f"{root}/healthz", timeout=timeout)
        doc = r.json()
    except Exception:          # noqa: BLE001 - not reachable, not JSON: not the guard
        return False
    return isinstance(doc, dict) and {"status", "upstream", "in_flight", "circuit_open_until"} <= set(doc)


def build(choice: ProviderChoice, settings, env=None):
    """The summarizer for a choice."""
    from .llm import AnthropicSummarizer, LocalSummarizer, OpenAISummarizer
    from .summarizers import ExtractiveSummarizer
    if choice.provider == "extractive":
        return ExtractiveSummarizer()
    if choice.provider == "local":
        return LocalSummarizer(settings, choice.timeout)
    key = choice.api_key(env)
    cls = OpenAISummarizer if choice.provider == "openai" else AnthropicSummarizer
    return cls(choice.base_url, choice.model, key, choice.timeout, settings)
