"""OTLP/HTTP for the guard's verdicts: the exporter's configuration read from the standard
variables as the OpenTelemetry SDKs (and so Claude Code's, Gemini CLI's and Codex's exporters)
read them, the two OTLP/HTTP encodings (binary protobuf and JSON) of the few messages the guard
sends, and one bounded POST.

Standard library only, and imported only where there is a verdict to send (the telemetry
worker, `telemetry.py`): an agent's hook never pays for it on its ordinary path, and its
compaction path only writes the verdicts down (docs/dependencies.md says why this
is not the SDK).

Variables (each signal's own form first, then the general one):
    OTEL_SDK_DISABLED=true                       nothing is exported
    OTEL_LOGS_EXPORTER / OTEL_METRICS_EXPORTER   `none` (or a list without `otlp`) turns a signal off
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT             the full URL of the logs endpoint, as given
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT          the full URL of the metrics endpoint, as given
    OTEL_EXPORTER_OTLP_ENDPOINT                  the base URL: /v1/logs and /v1/metrics appended
    OTEL_EXPORTER_OTLP_[LOGS_|METRICS_]PROTOCOL  http/protobuf (default) or http/json; grpc is not sent
    OTEL_EXPORTER_OTLP_[LOGS_|METRICS_]HEADERS   key=value,... (values percent-decoded)
    OTEL_EXPORTER_OTLP_[LOGS_|METRICS_]TIMEOUT   milliseconds (default 10000)
    OTEL_EXPORTER_OTLP_[LOGS_|METRICS_]COMPRESSION  gzip or none
    OTEL_EXPORTER_OTLP_[LOGS_|METRICS_]CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY   TLS files
    OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME  the resource (service.name: the latter wins)
A signal is exported when an endpoint for it is set and nothing turns it off.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import unquote

SIGNALS = {"logs": "/v1/logs", "metrics": "/v1/metrics"}
PROTOCOLS = ("http/protobuf", "http/json")
DEFAULT_TIMEOUT_MS = 10_000
SCOPE = "compaction_guard"


@dataclass
class Target:
    """Where and how one signal goes."""
    signal: str
    url: str
    protocol: str = "http/protobuf"
    headers: dict = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT_MS / 1000
    gzip: bool = False
    certificate: Optional[str] = None
    client_certificate: Optional[str] = None
    client_key: Optional[str] = None

    def describe(self) -> str:
        """The endpoint for a person: no credentials, no query (safe to log)."""
        from .redact import safe_url
        return f"{safe_url(self.url)} ({self.protocol})"


@dataclass
class Config:
    """The OTLP exporter the environment configures: a Target per signal exported, the
    resource's attributes, and what is wrong with the configuration (said once, not sent)."""
    targets: dict = field(default_factory=dict)
    resource: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)

    @property
    def enabled(self) -> bool:
        return bool(self.targets)


def _truthy(v) -> bool:
    return str(v or "").strip().lower() == "true"


def parse_pairs(text: str) -> dict:
    """`key1=value1,key2=value2` (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS): values
    percent-decoded, surrounding spaces dropped, a pair without `=` left out."""
    out = {}
    for part in (text or "").split(","):
        key, sep, value = part.partition("=")
        if sep and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
    return out


def configured(env) -> bool:
    """Whether the environment names an OTLP endpoint at all (the cheap first look)."""
    return not _truthy(env.get("OTEL_SDK_DISABLED")) and any(
        env.get(k) for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                             "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))


def from_env(env, defaults: Optional[dict] = None, timeout: Optional[float] = None) -> Config:
    """The exporter configuration of `env`; `defaults`: resource attributes the environment may
    override (host.name, user.name, service.version; service.name `compaction-guard`);
    `timeout`: seconds per request when no OTEL_EXPORTER_OTLP_*TIMEOUT says (else 10)."""
    cfg = Config()
    if _truthy(env.get("OTEL_SDK_DISABLED")):
        return cfg
    for signal, path in SIGNALS.items():
        up = signal.upper()
        chosen = env.get(f"OTEL_{up}_EXPORTER")
        if chosen is not None and "otlp" not in [c.strip().lower() for c in chosen.split(",")]:
            continue                  # `none`, `console`: not this exporter's to send
        own = env.get(f"OTEL_EXPORTER_OTLP_{up}_ENDPOINT")
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        if own:
            url = own
        elif base:
            url = base.rstrip("/") + path
        else:
            continue

        def pick(name, default=None):
            v = env.get(f"OTEL_EXPORTER_OTLP_{up}_{name}")
            return v if v not in (None, "") else env.get(f"OTEL_EXPORTER_OTLP_{name}", default)

        protocol = (pick("PROTOCOL") or "http/protobuf").strip().lower()
        if protocol not in PROTOCOLS:
            cfg.problems.append(f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: the guard sends OTLP over HTTP only; set "
                                f"http/protobuf or http/json (and the collector's HTTP port, usually 4318) to get "
                                f"its {signal}")
            continue
        if not url.lower().startswith(("http://", "https://")):
            cfg.problems.append(f"the OTLP {signal} endpoint is not an http(s) URL; give e.g. http://collector:4318")
            continue
        headers = parse_pairs(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
        headers.update(parse_pairs(env.get(f"OTEL_EXPORTER_OTLP_{up}_HEADERS", "")))
        seconds = timeout or DEFAULT_TIMEOUT_MS / 1000
        try:
            seconds = float(pick("TIMEOUT")) / 1000 if pick("TIMEOUT") else seconds
        except ValueError:
            pass
        cfg.targets[signal] = Target(signal, url, protocol, headers, max(0.1, seconds),
                                     (pick("COMPRESSION") or "").strip().lower() == "gzip",
                                     pick("CERTIFICATE"), pick("CLIENT_CERTIFICATE"), pick("CLIENT_KEY"))
    resource = {"service.name": "compaction-guard", **(defaults or {})}
    resource.update(parse_pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", "")))
    if env.get("OTEL_SERVICE_NAME"):
        resource["service.name"] = env["OTEL_SERVICE_NAME"]
    cfg.resource = resource
    return cfg


# ------------------------------------------------------------------ the messages
# Each message the guard sends, as the official .proto files define it
# (opentelemetry/proto/{common,resource,logs,metrics,collector}/v1): field name, number, wire
# kind, and the message of a nested field. `*` marks a repeated field.
_SCHEMA = {
    "AnyValue": [("stringValue", 1, "string"), ("boolValue", 2, "bool"), ("intValue", 3, "int64"),
                 ("doubleValue", 4, "double"), ("arrayValue", 5, "ArrayValue")],
    "ArrayValue": [("values*", 1, "AnyValue")],
    "KeyValue": [("key", 1, "string"), ("value", 2, "AnyValue")],
    "Resource": [("attributes*", 1, "KeyValue")],
    "InstrumentationScope": [("name", 1, "string"), ("version", 2, "string")],
    "LogRecord": [("timeUnixNano", 1, "fixed64"), ("observedTimeUnixNano", 11, "fixed64"),
                  ("severityNumber", 2, "enum"), ("severityText", 3, "string"), ("body", 5, "AnyValue"),
                  ("attributes*", 6, "KeyValue"), ("eventName", 12, "string")],
    "ScopeLogs": [("scope", 1, "InstrumentationScope"), ("logRecords*", 2, "LogRecord")],
    "ResourceLogs": [("resource", 1, "Resource"), ("scopeLogs*", 2, "ScopeLogs")],
    "ExportLogsServiceRequest": [("resourceLogs*", 1, "ResourceLogs")],
    "NumberDataPoint": [("attributes*", 7, "KeyValue"), ("startTimeUnixNano", 2, "fixed64"),
                        ("timeUnixNano", 3, "fixed64"), ("asDouble", 4, "double"), ("asInt", 6, "sfixed64")],
    "Sum": [("dataPoints*", 1, "NumberDataPoint"), ("aggregationTemporality", 2, "enum"), ("isMonotonic", 3, "bool")],
    "Gauge": [("dataPoints*", 1, "NumberDataPoint")],
    "Metric": [("name", 1, "string"), ("description", 2, "string"), ("unit", 3, "string"), ("gauge", 5, "Gauge"),
               ("sum", 7, "Sum")],
    "ScopeMetrics": [("scope", 1, "InstrumentationScope"), ("metrics*", 2, "Metric")],
    "ResourceMetrics": [("resource", 1, "Resource"), ("scopeMetrics*", 2, "ScopeMetrics")],
    "ExportMetricsServiceRequest": [("resourceMetrics*", 1, "ResourceMetrics")],
}
_FIELDS = {m: [(n.rstrip("*"), num, kind, n.endswith("*")) for n, num, kind in fs] for m, fs in _SCHEMA.items()}
CUMULATIVE = 2
SEVERITY = {"INFO": 9, "WARN": 13}


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _scalar(number: int, kind: str, v) -> bytes:
    if kind == "string":
        raw = v.encode("utf-8", "replace")
        return _varint(number << 3 | 2) + _varint(len(raw)) + raw
    if kind in ("bool", "enum", "int64"):
        return _varint(number << 3) + _varint(int(v))
    if kind == "fixed64":
        return _varint(number << 3 | 1) + struct.pack("<Q", int(v))
    if kind == "sfixed64":
        return _varint(number << 3 | 1) + struct.pack("<q", int(v))
    if kind == "double":
        return _varint(number << 3 | 1) + struct.pack("<d", float(v))
    raise ValueError(kind)


def to_protobuf(message: str, value: dict) -> bytes:
    """`value` (a dict keyed by the JSON field names) as the binary protobuf of `message`."""
    out = bytearray()
    for name, number, kind, repeated in _FIELDS[message]:
        if name not in value or value[name] is None:
            continue
        for item in (value[name] if repeated else [value[name]]):
            if kind in _FIELDS:
                raw = to_protobuf(kind, item)
                out += _varint(number << 3 | 2) + _varint(len(raw)) + raw
            else:
                out += _scalar(number, kind, item)
    return bytes(out)


def to_json_value(message: str, value: dict) -> dict:
    """`value` as OTLP/JSON: 64-bit integers as decimal strings, enums as numbers."""
    out = {}
    for name, _number, kind, repeated in _FIELDS[message]:
        if name not in value or value[name] is None:
            continue
        items = value[name] if repeated else [value[name]]
        if kind in _FIELDS:
            conv = [to_json_value(kind, i) for i in items]
        elif kind in ("int64", "fixed64", "sfixed64"):
            conv = [str(int(i)) for i in items]
        else:
            conv = list(items)
        out[name] = conv if repeated else conv[0]
    return out


def any_value(v) -> dict:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": v}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    return {"stringValue": str(v)}


def attributes(d: dict) -> list:
    """KeyValues of the entries that have a value (None left out)."""
    return [{"key": k, "value": any_value(v)} for k, v in d.items() if v is not None]


def logs_request(resource: dict, records: list, version: str = "") -> dict:
    """ExportLogsServiceRequest of `records` (each: time_ns, severity, body, event_name, attributes)."""
    return {"resourceLogs": [{"resource": {"attributes": attributes(resource)}, "scopeLogs": [{
        "scope": {"name": SCOPE, "version": version},
        "logRecords": [{"timeUnixNano": r["time_ns"], "observedTimeUnixNano": r.get("observed_ns", r["time_ns"]),
                        "severityNumber": SEVERITY[r["severity"]], "severityText": r["severity"],
                        "body": {"stringValue": r["body"]}, "attributes": attributes(r["attributes"]),
                        "eventName": r["event_name"]} for r in records]}]}]}


def metrics_request(resource: dict, metrics: list, version: str = "") -> dict:
    """ExportMetricsServiceRequest of `metrics` (each: name, description, unit, kind
    counter|gauge, start_ns, time_ns, points [(attributes, value)]); counters cumulative."""
    out = []
    for m in metrics:
        points = [{"attributes": attributes(a), "startTimeUnixNano": m["start_ns"], "timeUnixNano": m["time_ns"],
                   **({"asInt": v} if isinstance(v, int) else {"asDouble": float(v)})} for a, v in m["points"]]
        data = ({"sum": {"dataPoints": points, "aggregationTemporality": CUMULATIVE, "isMonotonic": True}}
                if m["kind"] == "counter" else {"gauge": {"dataPoints": points}})
        out.append({"name": m["name"], "description": m["description"], "unit": m["unit"], **data})
    return {"resourceMetrics": [{"resource": {"attributes": attributes(resource)}, "scopeMetrics": [{
        "scope": {"name": SCOPE, "version": version}, "metrics": out}]}]}


def body(target: Target, message: str, value: dict) -> tuple:
    """(bytes, content type) of `value` in the target's protocol."""
    if target.protocol == "http/json":
        return json.dumps(to_json_value(message, value), separators=(",", ":")).encode(), "application/json"
    return to_protobuf(message, value), "application/x-protobuf"


class ExportError(Exception):
    """One export that did not arrive: why, in words safe to log (no header, no credential)."""


def post(target: Target, message: str, value: dict, deadline: Optional[float] = None) -> None:
    """One POST of `value` to the target, within its timeout (and the `deadline`, a
    time.monotonic() value, when sooner). Raises ExportError when it was not accepted."""
    data, ctype = body(target, message, value)
    headers = {**target.headers, "Content-Type": ctype}
    if target.gzip:
        import gzip
        data = gzip.compress(data)
        headers["Content-Encoding"] = "gzip"
    request("POST", target.url, data, headers, target.timeout, deadline, target.describe(),
            tls=(target.certificate, target.client_certificate, target.client_key))


def request(method: str, url: str, data: bytes, headers: dict, timeout: float, deadline: Optional[float] = None,
            shown: Optional[str] = None, tls: tuple = (None, None, None)) -> None:
    """One HTTP request with a hard timeout (the standard library's client: nothing more is
    imported for it). Raises ExportError, naming `shown` (the URL without credentials), unless
    the answer is 2xx."""
    import http.client
    import time
    from urllib.parse import urlsplit
    from .redact import safe_url
    shown = shown or safe_url(url)
    if deadline is not None:
        timeout = min(timeout, deadline - time.monotonic())
        if timeout <= 0:
            raise ExportError(f"{shown}: no time left to send")
    u = urlsplit(url)
    try:
        if u.scheme == "https":
            import ssl
            ctx = ssl.create_default_context(cafile=tls[0] or None)
            if tls[1]:
                ctx.load_cert_chain(tls[1], tls[2] or None)
            conn = http.client.HTTPSConnection(u.hostname, u.port, timeout=timeout, context=ctx)
        else:
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        try:
            conn.request(method, (u.path or "/") + (f"?{u.query}" if u.query else ""), body=data,
                         headers={"User-Agent": "compaction-guard", **headers})
            resp = conn.getresponse()
            answer = resp.read(1 << 16)
        finally:
            conn.close()
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise ExportError(f"{shown}: {type(exc).__name__}: {exc}"[:300]) from None
    if not 200 <= resp.status < 300:
        said = answer.decode("utf-8", "replace").strip().splitlines()[:1]
        raise ExportError(f"{shown}: HTTP {resp.status} {resp.reason}{': ' + said[0][:160] if said else ''}"[:300])
