"""`serve` under hostile input, floods and faults (issue #26): every case here crashed it,
leaked a key, looped or hung before the change. Real uvicorn on 127.0.0.1, the scripted
upstream (modelkit's FakeLLM) over real HTTP, raw sockets where a client misbehaves."""
import base64
import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
from hypothesis import HealthCheck, example, given, settings as hsettings, strategies as st  # noqa: E402

from compaction_guard.errors import GuardError  # noqa: E402
from compaction_guard.providers import ProviderChoice  # noqa: E402
from compaction_guard.redact import Redactor, safe_url  # noqa: E402
from compaction_guard.serve import BadRequest, check_upstream_is_not_us, parse_body, serve  # noqa: E402
from compaction_guard.settings import DEFAULT  # noqa: E402

from modelkit.base import Handler, Served  # noqa: E402
from modelkit.behaviours import GOOD, B, FakeLLM, ok  # noqa: E402
from test_serve import HISTORY, MSGS, Running, free_port, oai, state, upstream  # noqa: E402

KEY = "sk-upstream-secret-4f9a2c7e1b"


def post(run, path, body, headers=None, raw=None, timeout=30):
    """(status, headers, text) of a POST of `body` (or the bytes `raw`)."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(run.url + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode("utf-8", "replace")


def get(run, path, headers=None):
    req = urllib.request.Request(run.url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def no_key_in(text: str, key: str = KEY) -> bool:
    return not any(key[i:i + 8] in text for i in range(len(key) - 7))


# ------------------------------------------------------------------ requests that crashed it
CRASHERS = {
    "lone surrogate in content": b'{"messages": [{"role": "user", "content": "a \\ud800 b"}]}',
    "lone surrogate in model": b'{"model": "\\udc00", "messages": [{"role": "user", "content": "hi"}]}',
    "temperature NaN": b'{"temperature": NaN, "messages": [{"role": "user", "content": "hi"}]}',
    "max_tokens 1e400": b'{"max_tokens": 1e400, "messages": [{"role": "user", "content": "hi"}]}',
    "max_tokens abc": b'{"max_tokens": "abc", "messages": [{"role": "user", "content": "hi"}]}',
    "max_tokens [1]": b'{"max_tokens": [1], "messages": [{"role": "user", "content": "hi"}]}',
    "max_completion_tokens x": b'{"max_completion_tokens": "x", "messages": [{"role": "user", "content": "hi"}]}',
    "nested 990": b'{"messages": [], "x": ' + b"[" * 990 + b"]" * 990 + b"}",
    "nested 100000": b"[" * 100000 + b"]" * 100000,
}


@pytest.mark.parametrize("name", sorted(CRASHERS))
def test_a_request_that_crashed_it_is_a_400_in_its_own_protocol(home, name):
    with FakeLLM([B("loop"), ok()]) as fake, Running(home, upstream(fake)) as run:
        for path, proto in (("/v1/chat/completions", "openai"), ("/v1/messages", "anthropic")):
            for stream in (False, True):
                raw = CRASHERS[name]
                if stream and raw.startswith(b"{"):
                    raw = b'{"stream": true, ' + raw[1:]
                code, headers, text = post(run, path, None, raw=raw)
                assert code == 400, (name, path, code, text)
                doc = json.loads(text)
                if proto == "anthropic":
                    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
                else:
                    assert doc["error"]["code"] == 400
        assert fake.requests == []       # nothing sent on
        code, _ = get(run, "/healthz")
        assert code == 200


def json_values():
    text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=12)
    scalars = st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=True) | text
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
                        max_leaves=20)


FIELDS = ("model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stream", "stop",
          "stop_sequences", "system", "stream_options", "thinking", "frequency_penalty")


@hsettings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.sampled_from(FIELDS), json_values(), max_size=6) | json_values())
def test_any_json_value_is_refused_or_read_whole(value):
    """Whatever JSON a client sends: a BadRequest, or a request every later step can use
    (translated, its conversation read, made aggressive, encoded to send upstream)."""
    from compaction_guard.serve import read_request, translate
    raw = json.dumps(value, allow_nan=True).encode()
    try:
        body = parse_body(raw, DEFAULT)
    except BadRequest:
        return
    for proto in ("openai", "anthropic"):
        read_request(proto, body)
        for to in ("openai", "anthropic"):
            json.dumps(translate(proto, body, to), ensure_ascii=False, allow_nan=False).encode("utf-8")


@hsettings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(fields=st.dictionaries(st.sampled_from(FIELDS[2:]), json_values(), max_size=4), stream=st.booleans())
@example(fields={"max_tokens": "abc"}, stream=False)
@example(fields={"max_completion_tokens": [1]}, stream=True)
@example(fields={"temperature": float("nan")}, stream=True)
@example(fields={"max_tokens": float("inf")}, stream=False)
def test_any_field_values_over_http_never_crash_the_server(served, fields, stream):
    """The same over HTTP, L1 failing so L2 reads the fields: a 400, or a well-formed answer
    (a stream ending in [DONE]); never a 500."""
    run = served
    body = dict(fields, messages=MSGS, stream=stream)
    code, headers, text = post(run, "/v1/chat/completions", None, raw=json.dumps(body, allow_nan=True).encode())
    assert code in (200, 400), (code, text[:300])
    if code == 200 and stream:
        assert text.rstrip().endswith("data: [DONE]"), text[-200:]
    elif code == 200:
        assert json.loads(text)["choices"][0]["message"]["content"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("served")
    with FakeLLM([B("loop")]) as fake, Running(home, upstream(fake)) as run:
        yield run


def test_an_exception_in_the_upstream_call_is_a_failed_level_and_the_request_is_recorded(home, monkeypatch):
    from compaction_guard import serve as S

    async def broken(self, url, body, headers):
        raise RuntimeError("something unexpected")
    monkeypatch.setattr(S.Upstream, "_post", broken)
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        out = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
        assert out.headers["x-compaction-guard-level"] == "3"
        chunks = list(oai(run).chat.completions.create(model="g", messages=MSGS, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert state(home)["level_usage"]["l3_deterministic"] == 2


def test_a_stream_whose_compaction_fails_inside_ends_with_an_error_event(home, monkeypatch):
    from compaction_guard import serve as S

    async def broken(self, proto, body, size=0):
        raise RuntimeError("a bug")
    monkeypatch.setattr(S.Proxy, "compact", broken)
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        code, _, text = post(run, "/v1/chat/completions", {"messages": MSGS, "stream": True})
        assert code == 200 and '"error"' in text and text.rstrip().endswith("data: [DONE]")
        code, _, text = post(run, "/v1/messages", {"messages": MSGS[1:], "max_tokens": 200, "stream": True})
        assert code == 200 and "event: error" in text
        code, _, text = post(run, "/v1/chat/completions", {"messages": MSGS})
        assert code == 500 and json.loads(text)["error"]["code"] == 500


def test_a_key_or_token_that_cannot_be_sent_is_refused_at_start(home, monkeypatch):
    choice = ProviderChoice("openai", model="m", base_url="http://127.0.0.1:9/v1", api_key_env="UPSTREAM_KEY")
    for bad in ("sk-clé-non-ascii", KEY + "\n", " " + KEY):
        monkeypatch.setenv("UPSTREAM_KEY", bad)
        with pytest.raises(GuardError, match=r"\$UPSTREAM_KEY") as e:
            serve(home, choice, DEFAULT, port=free_port())
        assert bad.strip() not in str(e.value)
    monkeypatch.setenv("UPSTREAM_KEY", KEY)
    for bad in ("   ", "tok\n"):
        monkeypatch.setenv("GUARD_SERVE_TOKEN", bad)
        with pytest.raises(GuardError, match="GUARD_SERVE_TOKEN"):
            serve(home, choice, DEFAULT, port=free_port())


# ------------------------------------------------------------------ keys
def test_redactor_masks_whole_cut_split_and_encoded_copies():
    r = Redactor([KEY])
    cases = [f"invalid key {KEY}", f"key {KEY[:20]}... rejected", f'"{KEY[:9]}" +\n "{KEY[9:]}"',
             "Basic " + base64.b64encode(f"user:{KEY}".encode()).decode(), KEY.encode().hex(),
             urllib.request.quote(KEY, safe="")]
    for text in cases:
        assert no_key_in(r(text)) and "***" in r(text), (text, r(text))
    assert r("required: a plain sentence about keys") == "required: a plain sentence about keys"
    assert safe_url("https://bob:hunter22@api.example.com:8443/v1?key=abc") == "https://api.example.com:8443/v1?key=***"


def test_an_upstream_error_ending_with_the_key_gives_the_client_none_of_it(home, monkeypatch):
    monkeypatch.setenv("UPSTREAM_KEY", KEY)
    long_message = "Incorrect API key provided: " + "x" * 150 + " " + KEY
    with FakeLLM([B("status", code=401, message=long_message)]) as fake, \
            Running(home, upstream(fake), observe=True) as run:
        code, _, text = post(run, "/v1/chat/completions", {"messages": MSGS})
        assert code == 502 and "HTTP 401" in text and no_key_in(text), text
    assert no_key_in(json.dumps(state(home)))


def test_a_key_in_a_200_answer_never_reaches_the_client(home, monkeypatch):
    monkeypatch.setenv("UPSTREAM_KEY", KEY)
    with FakeLLM([ok(GOOD + f" The key was {KEY}.")]) as fake, Running(home, upstream(fake)) as run:
        text = oai(run).chat.completions.create(model="g", messages=MSGS).choices[0].message.content
    assert no_key_in(text) and "***" in text


def test_healthz_never_prints_credentials_written_into_the_upstream_url(home):
    with FakeLLM([ok()]) as fake:
        url = fake.url.replace("http://", "http://admin:pa55word-9z8y7x@") + "/v1?api_key=qwerty123456"
        with Running(home, ProviderChoice("openai", model="m", base_url=url, timeout=10)) as run:
            code, text = get(run, "/healthz")
    assert code == 200 and "pa55word" not in text and "qwerty123456" not in text and "admin" not in text


def test_the_chain_scrubs_an_error_before_cutting_it(monkeypatch):
    from compaction_guard.llm import OpenAISummarizer
    from compaction_guard.summarizers import SummaryRequest, SummarizerError
    message = "Incorrect API key provided: " + "y" * 150 + KEY     # cut at 200: 22 of its characters
    with FakeLLM([B("status", code=401, message=message)]) as fake:
        s = OpenAISummarizer(fake.url + "/v1", "m", KEY, 10, DEFAULT)
        with pytest.raises(SummarizerError) as e:
            s.summarize(HISTORY, SummaryRequest(1, "normal", 200, 400))
    assert no_key_in(str(e.value))


# ------------------------------------------------------------------ loops
@pytest.mark.parametrize("host", ["127.1", "0.0.0.0", "localhost.", "[::ffff:127.0.0.1]", "2130706433", "127.0.0.1"])
def test_the_start_up_check_sees_every_spelling_of_itself(host):
    with pytest.raises(GuardError, match="this proxy itself"):
        check_upstream_is_not_us(f"http://{host}:8742/v1", "127.0.0.1", 8742)
    with pytest.raises(GuardError, match="this proxy itself"):
        check_upstream_is_not_us(f"http://{host}:8742/v1", "0.0.0.0", 8742)
    check_upstream_is_not_us(f"http://{host}:8743/v1", "127.0.0.1", 8742)     # another port: fine


class Forwarder(Served):
    """An HTTP forwarder that drops every header it does not know (the hop header too)."""

    def __init__(self):
        self.target = None
        self.count = 0
        fwd = self

        class H(Handler):
            def do_POST(self):
                fwd.count += 1
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = urllib.request.Request(fwd.target + self.path, data=data, method="POST",
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        code, out = r.status, r.read()
                except urllib.error.HTTPError as e:
                    code, out = e.code, e.read()
                self.send_bytes(code, out, "application/json")

        self.listen(H)


def test_behind_a_forwarder_that_drops_the_hop_header_one_request_makes_one_self_request(home):
    with Forwarder() as fwd:
        choice = ProviderChoice("openai", model="m", base_url=fwd.url + "/v1", timeout=10)
        with Running(home, choice) as run:
            fwd.target = run.url
            out = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
            assert out.headers["x-compaction-guard-level"] == "3"
            assert "loop" in out.headers["x-compaction-guard-failures"]
            time.sleep(0.2)
    assert fwd.count == 1       # the guard's own call, once: answered 508 by itself, not retried, no L2
    st_ = state(home)
    assert st_["totals"]["served"] == 1 and st_["level_usage"]["l3_deterministic"] == 1


def test_a_508_is_not_retried(home):
    with FakeLLM([B("status", code=508)]) as fake, Running(home, upstream(fake)) as run:
        out = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
    assert out.headers["x-compaction-guard-level"] == "3"
    assert len(fake.requests) == 1


# ------------------------------------------------------------------ floods
def test_compactions_beyond_the_cap_get_429_with_retry_after(home):
    from concurrent.futures import ThreadPoolExecutor
    s = DEFAULT.with_overrides(serve_max_concurrent=2, serve_max_queued=1)
    with FakeLLM([B("slow", seconds=1.5)]) as fake, Running(home, upstream(fake), s) as run:
        with ThreadPoolExecutor(6) as pool:
            outs = list(pool.map(lambda _: post(run, "/v1/chat/completions", {"messages": MSGS}), range(6)))
            code, text = get(run, "/healthz")
    codes = sorted(o[0] for o in outs)
    assert codes == [200, 200, 200, 429, 429, 429], codes
    assert all(o[1].get("retry-after") == "5" for o in outs if o[0] == 429)
    assert max(len(r) for r in [fake.requests]) <= 3


def test_an_upstream_answer_over_the_cap_is_a_failed_level(home):
    s = DEFAULT.with_overrides(serve_max_upstream_bytes=100_000)
    with FakeLLM([ok("word " * 50_000)]) as fake, Running(home, upstream(fake), s) as run:
        out = oai(run).chat.completions.with_raw_response.create(model="g", messages=MSGS)
    assert out.headers["x-compaction-guard-level"] == "3"


def test_healthz_answers_quickly_while_large_compactions_are_checked(home):
    from concurrent.futures import ThreadPoolExecutor
    big = [{"role": "user", "content": (HISTORY + "\n") * 2500}]     # ~2.5 MB each
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        with ThreadPoolExecutor(9) as pool:
            futs = [pool.submit(post, run, "/v1/chat/completions", {"messages": big}, None, None, 120)
                    for _ in range(8)]
            time.sleep(0.5)
            waits = {"/livez": [], "/healthz": []}
            while not all(f.done() for f in futs):
                for path, seen in waits.items():
                    t = time.perf_counter()
                    code, _ = get(run, path)
                    seen.append(time.perf_counter() - t)
                    assert code == 200
                time.sleep(0.05)
            assert all(f.result()[0] == 200 for f in futs)
    for path, seen in waits.items():
        seen.sort()
        assert seen and seen[len(seen) // 2] < 0.1, (path, seen)


def test_a_large_body_read_in_a_worker_process_is_refused_as_a_small_one_is(home):
    # over serve_process_body_bytes the body is parsed in a worker process: its refusal
    # still reaches the client as a 400 in its protocol
    big = [{"role": "user", "content": (HISTORY + "\n") * 1200}]
    assert len(json.dumps(big)) > DEFAULT.serve_process_body_bytes
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        code, _, text = post(run, "/v1/chat/completions", {"messages": big, "max_tokens": "abc"})
        assert code == 400 and "max_tokens" in text
        code, _, text = post(run, "/v1/messages", {"messages": big, "max_tokens": float("nan")})
        assert code == 400
        code, headers, text = post(run, "/v1/chat/completions", {"messages": big}, None, None, 120)
        # checked like any other: the scripted summary does not name this history, L3 does
        assert code == 200 and {k.lower(): v for k, v in headers.items()}["x-compaction-guard-level"] == "3"
        assert json.loads(text)["choices"][0]["message"]["content"].strip()


# ------------------------------------------------------------------ slow clients
def test_slow_headers_and_a_slow_body_hold_nothing_open(home):
    s = DEFAULT.with_overrides(serve_header_timeout_seconds=1.0, serve_body_timeout_seconds=1.0)
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake), s) as run:
        a = socket.create_connection(("127.0.0.1", run.port))
        a.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        t = time.monotonic()
        a.settimeout(5)
        assert a.recv(100) == b""                     # closed by the guard
        assert time.monotonic() - t < 3
        b = socket.create_connection(("127.0.0.1", run.port))
        b.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 1000\r\n\r\n{\"mess")
        b.settimeout(5)
        assert b.recv(200).startswith(b"HTTP/1.1 408")
        a.close()
        b.close()


def test_shutdown_ends_within_its_deadline_whatever_clients_do(home):
    s = DEFAULT.with_overrides(serve_shutdown_seconds=6.0, serve_header_timeout_seconds=60.0,
                               serve_body_timeout_seconds=60.0)
    with FakeLLM([B("slow", seconds=60)]) as fake:
        run = Running(home, upstream(fake), s).__enter__()
        slow = [socket.create_connection(("127.0.0.1", run.port)) for _ in range(2)]
        slow[0].sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        slow[1].sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n{")
        box = {}
        waiting = threading.Thread(target=lambda: box.setdefault("r", post(run, "/v1/chat/completions",
                                                                           {"messages": MSGS})), daemon=True)
        waiting.start()
        time.sleep(1.0)
        t = time.monotonic()
        run.box["server"].should_exit = True
        run.thread.join(30)
        took = time.monotonic() - t
        waiting.join(5)
        for c in slow:
            c.close()
    assert not run.thread.is_alive() and took < 6.0 + 2, took
    assert box["r"][0] == 200 and box["r"][1]["x-compaction-guard-level"] == "3"   # answered, at L3


# ------------------------------------------------------------------ the breaker
def test_requests_the_upstream_refuses_as_invalid_do_not_open_the_breaker(home):
    with FakeLLM([B("status", code=400, message="max_tokens: unsupported value")]) as fake, \
            Running(home, upstream(fake)) as run:
        for _ in range(4):
            oai(run).chat.completions.create(model="g", messages=MSGS)
    assert state(home)["circuit"].get("open_until") is None
    with FakeLLM([B("status", code=500)]) as fake, Running(home, upstream(fake)) as run:
        for _ in range(3):
            oai(run).chat.completions.create(model="g", messages=MSGS)
    assert state(home)["circuit"]["open_until"]


# ------------------------------------------------------------------ access
def test_beyond_loopback_every_path_but_livez_needs_the_token(home, monkeypatch):
    monkeypatch.setenv("GUARD_SERVE_TOKEN", "tok-abc-123")
    with FakeLLM([ok()]) as fake:
        run = Running(home, upstream(fake), host="0.0.0.0")
        with run:
            for path in ("/healthz", "/metrics", "/v1/models"):
                assert get(run, path)[0] == 401, path
                assert get(run, path, {"Authorization": "Bearer tok-abc-123"})[0] == 200, path
            assert get(run, "/livez") == (200, '{"status":"ok"}')


# ------------------------------------------------------------------ the state
def test_a_state_with_failures_of_the_wrong_shape_still_reports(home):
    from conftest import run_guard
    from compaction_guard.state import state_path
    p = state_path(home)
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps({"failures": [{"kind": 5}, {"failure_type": None, "level_used": "x"},
                                          {"failure_type": "empty", "source": "serve", "detected_at":
                                           "2026-12-01T00:00:00+00:00", "level_used": 1}]}))
    text = run_guard("--report", home=home)
    js = run_guard("--report", "--format", "json", home=home)
    assert text.returncode == 0 and js.returncode == 0, (text.stderr, js.stderr)
    assert json.loads(js.stdout)["failures_by_kind"] == {"empty": 1}


def test_the_json_report_does_not_render_the_text_one(home, monkeypatch, capsys):
    from compaction_guard import cli, render

    def boom(rep):
        raise AssertionError("rendered")
    monkeypatch.setattr(render, "report_text", boom)
    assert cli.main(["--report", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["failures_total"] == 0


def test_an_unreadable_state_does_not_stop_compaction_and_healthz_says_so(home):
    from compaction_guard.state import state_path
    p = state_path(home)
    p.mkdir(parents=True)                 # a directory where the state file should be
    with FakeLLM([ok()]) as fake, Running(home, upstream(fake)) as run:
        out = oai(run).chat.completions.create(model="g", messages=MSGS)
        code, text = get(run, "/healthz")
    assert out.choices[0].message.content == GOOD
    doc = json.loads(text)
    assert code == 503 and doc["status"] == "degraded" and "is a directory" in doc["state_error"]


def test_a_write_killed_midway_leaves_no_temporary_file_behind(home):
    from compaction_guard.state import StateStore, state_path
    p = state_path(home)
    p.parent.mkdir(parents=True)
    left = p.parent / ".state-abc123.tmp"
    left.write_text("{half a state")
    with StateStore(p, DEFAULT).update() as s:
        s["totals"]["served"] = 1
    assert not left.exists() and StateStore(p, DEFAULT).read()["totals"]["served"] == 1
