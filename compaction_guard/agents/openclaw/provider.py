"""OpenClaw's own compaction model, as the chain's default summarizer.

It is `agents.defaults.compaction.model` in openclaw.json: `provider/model`, or a bare name
that OpenClaw resolves as an alias of `agents.defaults.models` ("anthropic/x": {alias:
"sonnet"}), then as the id of a model exactly one configured provider lists. The provider's
`baseUrl`/`api` come from `models.providers.<id>` (a model entry's own `api` and `baseUrl`
win), its key from `apiKey`: a string, `${VAR}`, or a SecretRef `{source: "env", id: VAR}`.
The key itself is read at call time and never stored or printed.
"""
from __future__ import annotations

import re
from typing import Optional

from ...providers import ProviderChoice

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
_ENV_REF_RE = re.compile(r"^\$\{?([A-Z_][A-Z0-9_]*)\}?$")


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
