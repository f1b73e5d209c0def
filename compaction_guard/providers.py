"""Which summarizer L1 and L2 use, and where that choice came from.

Order: flags (--provider, --base-url, --model, --api-key-env, --timeout), then the
environment (GUARD_PROVIDER, GUARD_BASE_URL, GUARD_MODEL, GUARD_API_KEY_ENV,
GUARD_TIMEOUT), then OpenClaw's own compaction model from its config (layout.py finds
openclaw.json) when the guard can reach it, else the embedded extractive summarizer.

OpenClaw's compaction model is `agents.defaults.compaction.model`: `provider/model`, or a
bare name that OpenClaw resolves as an alias of `agents.defaults.models` ("anthropic/x":
{alias: "sonnet"}), then as the id of a model exactly one configured provider lists. The
provider's `baseUrl`/`api` come from `models.providers.<id>` (a model entry's own `api`
and `baseUrl` win), its key from `apiKey`: a string, `${VAR}`, or a SecretRef
`{source: "env", id: VAR}`. The key itself is read at call time and never stored or printed.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

from .errors import GuardError

PROVIDERS = ("openai", "anthropic", "local", "extractive")

# OpenClaw provider ids the guard can speak to, with their API style, URL and key variable.
KNOWN = {
    "openai": ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    "anthropic": ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openrouter": ("openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "ollama": ("openai", "http://127.0.0.1:11434/v1", None),
    "lmstudio": ("openai", "http://127.0.0.1:1234/v1", None),
    "vllm": ("openai", "http://127.0.0.1:8000/v1", None),
    "groq": ("openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": ("openai", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": ("openai", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
}
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_URL = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_ENV_REF_RE = re.compile(r"^\$\{?([A-Z_][A-Z0-9_]*)\}?$")


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


def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _model_ref(cfg: dict) -> tuple:
    """(provider id, model id, how it was named) of the compaction model, or (None, None, why)."""
    ref = _get(cfg, "agents", "defaults", "compaction", "model")
    if isinstance(ref, dict):
        ref = ref.get("primary")
    if not isinstance(ref, str) or not ref.strip():
        return None, None, None
    ref = ref.strip().split("@", 1)[0]            # an auth-profile suffix is not part of the model
    if "/" in ref:
        prov, model = ref.split("/", 1)
        models = _get(cfg, "models", "providers", prov, "models")
        for m in models if isinstance(models, list) else []:      # provider/alias within that provider
            if isinstance(m, dict) and str(m.get("alias") or "").lower() == model.lower() and m.get("id"):
                return prov, str(m["id"]), ref
        return prov, model, ref
    aliases = _get(cfg, "agents", "defaults", "models")
    if isinstance(aliases, dict):
        for full, entry in aliases.items():
            if isinstance(entry, dict) and str(entry.get("alias") or "").lower() == ref.lower() and "/" in str(full):
                prov, model = str(full).split("/", 1)
                return prov, model, f"{ref} (alias of {full})"
    owners = []
    providers = _get(cfg, "models", "providers")
    for prov, pc in (providers.items() if isinstance(providers, dict) else ()):
        for m in (pc.get("models") if isinstance(pc, dict) and isinstance(pc.get("models"), list) else ()):
            if isinstance(m, dict) and m.get("id") == ref:
                owners.append(prov)
    if len(owners) == 1:
        return owners[0], ref, f"{ref} (of provider {owners[0]})"
    return None, None, (f"the compaction model {ref!r} is neither an alias in agents.defaults.models nor the id of "
                        f"a model exactly one provider lists ({len(owners)} do)")


def _key_source(raw) -> tuple:
    """(variable name, literal key, problem) of an apiKey: a string, ${VAR}, or a SecretRef."""
    if isinstance(raw, str):
        m = _ENV_REF_RE.match(raw.strip())
        if m:
            return m.group(1), None, None
        return None, (raw.strip() or None), None
    if isinstance(raw, dict):
        if raw.get("source") == "env" and isinstance(raw.get("id"), str) and raw["id"].strip():
            return raw["id"].strip(), None, None
        return None, None, f"its apiKey is a SecretRef from {raw.get('source')!r}, which the guard cannot read"
    return None, None, None


def from_openclaw(layout, env) -> Optional[ProviderChoice]:
    """OpenClaw's compaction model as a ProviderChoice, when it names one the guard can reach."""
    cfg, problem = getattr(layout, "config", None), getattr(layout, "config_problem", None)
    where = getattr(layout, "config_path", "openclaw.json")
    if cfg is None:
        return ProviderChoice("extractive", note=problem) if problem else None
    prov_id, model, named = _model_ref(cfg)
    if prov_id is None:
        return ProviderChoice("extractive", note=f"{where}: {named}; using the extractive summarizer") if named else None
    custom = _get(cfg, "models", "providers", prov_id)
    entry = None
    if isinstance(custom, dict) and isinstance(custom.get("models"), list):
        entry = next((m for m in custom["models"] if isinstance(m, dict) and m.get("id") == model), None)
    base = (entry or {}).get("baseUrl") or (custom.get("baseUrl") if isinstance(custom, dict) else None)
    literal_key, key_env, key_problem = None, None, None
    if base:
        api = str((entry or {}).get("api") or (custom or {}).get("api") or "openai-completions")
        kind = "anthropic" if api.startswith("anthropic") else "openai"
        base = str(base).rstrip("/")
        if kind == "anthropic" and base.endswith("/v1"):
            base = base[:-3]
        key_env, literal_key, key_problem = _key_source((entry or {}).get("apiKey", (custom or {}).get("apiKey")))
        local = re.match(r"https?://(127\.|localhost|\[::1\])", base) is not None
        if key_env is None and literal_key is None and prov_id in KNOWN:
            key_env = KNOWN[prov_id][2]
    elif prov_id in KNOWN:
        kind, base, key_env = KNOWN[prov_id]
        local = key_env is None
    else:
        return ProviderChoice("extractive", note=f"{where}'s compaction model {named} uses provider '{prov_id}', "
                                                 "which the guard cannot call; using the extractive summarizer")
    if key_problem and not local:
        return ProviderChoice("extractive", note=f"{where}'s compaction model {named}: {key_problem}; using the "
                                                 "extractive summarizer")
    if not local and not literal_key and not (key_env and env.get(key_env)):
        return ProviderChoice("extractive", note=f"{where} names {named} for compaction but {key_env or 'its API key'} "
                                                 "is not set; using the extractive summarizer")
    origin = {k: "openclaw.json" for k in ("provider", "model", "base_url", "api_key_env")}
    return ProviderChoice(kind, model, base, key_env, origin=origin, _literal_key=literal_key,
                          note=f"compaction model {named} from {where}")


def resolve(flags: dict, layout, env=None, file_values: Optional[dict] = None) -> ProviderChoice:
    """The provider to use. `flags`: provider, base_url, model, api_key_env, timeout (None = not given);
    then the environment (GUARD_*), then `file_values` (config.yaml's provider: section), then
    OpenClaw's compaction model in the `layout`'s config (layout.Layout)."""
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
        from .layout import of
        chosen = from_openclaw(of(layout), env)
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
