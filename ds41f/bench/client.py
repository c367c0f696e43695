"""A small async client for an OpenAI-compatible server: streaming chat completions, timed per chunk.

Plain HTTP/1.1 over asyncio streams, TLS for https:// (a site's API with a certificate: ``trust`` names the file the
server's certificate must verify against), so the bench adds no library of its own between the socket and the
clock: bench/client_overhead measures what it adds.
Token counts come from the final ``usage`` chunk (``stream_options.include_usage``), never from counting
chunks: a chunk may carry several tokens, or none.
"""

from __future__ import annotations

import asyncio
import json
import math
import ssl
import time
from urllib.parse import urlsplit


class RequestError(RuntimeError):
    """A request that did not complete (HTTP status, broken stream, or no usage)."""


# What https:// connections trust: the system's CAs, unless ``trust`` names the site's certificate file.
_TLS = {"context": None}


def trust(context):
    """The ssl.SSLContext every https:// request of this process verifies the server with."""
    _TLS["context"] = context


async def _open(url):
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise RequestError("%s: only http:// and https:// endpoints are supported (the head node's API)" % url)
    if parts.scheme == "http":
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    else:
        context = _TLS["context"] or ssl.create_default_context()
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 443, ssl=context)
    return parts, reader, writer


async def _head(reader):
    status_line = (await reader.readline()).decode("latin-1").strip()
    try:
        status = int(status_line.split(" ", 2)[1])
    except (IndexError, ValueError):
        raise RequestError("not an HTTP response: %r" % status_line) from None
    headers = {}
    while True:
        line = (await reader.readline()).decode("latin-1")
        if line in ("\r\n", "\n", ""):
            break
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers


async def _body_chunks(reader, headers):
    """The body's bytes as they arrive, whether chunked or with a Content-Length (or until close)."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        remaining = int(headers["content-length"])
        while remaining:
            data = await reader.read(min(remaining, 65536))
            if not data:
                return
            remaining -= len(data)
            yield data
    else:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            yield data


async def request(url, method="GET", body=None, timeout=600, api_key=None):
    """(status, body bytes) of one plain request."""
    parts, reader, writer = await _open(url)
    try:
        payload = json.dumps(body).encode() if body is not None else b""
        writer.write(_request_bytes(method, parts, payload, api_key=api_key))
        await writer.drain()
        status, headers = await asyncio.wait_for(_head(reader), timeout)
        data = b"".join([c async for c in _body_chunks(reader, headers)])
        return status, data
    finally:
        writer.close()


def _request_bytes(method, parts, payload, accept="application/json", api_key=None):
    path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % parts.netloc, "Accept: %s" % accept,
             "Connection: close", "User-Agent: ds41f-bench"]
    if api_key:
        lines.append("Authorization: Bearer %s" % api_key)
    if payload:
        lines += ["Content-Type: application/json", "Content-Length: %d" % len(payload)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def get_text(url, timeout=30, api_key=None):
    status, data = await request(url, timeout=timeout, api_key=api_key)
    if status != 200:
        raise RequestError("GET %s: HTTP %d %s" % (url, status, data[:200].decode(errors="replace")))
    return data.decode()


async def count_tokens(base_url, model, messages, api_key=None):
    """Prompt tokens of chat messages by the server's /tokenize (vLLM and SGLang have one); None without it."""
    status, data = await request(base_url.rstrip("/") + "/tokenize", "POST", {"model": model, "messages": messages},
                                 timeout=60, api_key=api_key)
    return json.loads(data).get("count") if status == 200 else None


async def chat_stream(base_url, body, timeout=600, api_key=None):
    """One streamed chat completion. Returns its timings, text and usage.

    ``t_send`` is taken just before the request leaves, ``t_first`` when the first chunk with generated text
    (answer or reasoning) arrives, ``t_last`` at the end of the stream.
    """
    body = dict(body, stream=True, stream_options={"include_usage": True})
    parts, reader, writer = await _open(base_url.rstrip("/") + "/v1/chat/completions")
    text, reasoning, usage, finish, chunks, logprobs = [], [], None, None, 0, []
    t_first = None
    busy = 0.0  # time this client spends handling what arrived (bench/client_overhead reads it)
    try:
        payload = json.dumps(body).encode()
        t_send = time.perf_counter()
        writer.write(_request_bytes("POST", parts, payload, accept="text/event-stream", api_key=api_key))
        await writer.drain()
        status, headers = await asyncio.wait_for(_head(reader), timeout)
        if status != 200:
            data = b"".join([c async for c in _body_chunks(reader, headers)])
            raise RequestError("HTTP %d: %s" % (status, data[:300].decode(errors="replace")))
        buffer = b""
        async for data in _body_chunks(reader, headers):
            now = time.perf_counter()
            buffer += data
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if not line.startswith(b"data:"):
                        continue
                    item = line[5:].strip()
                    if item == b"[DONE]":
                        continue
                    msg = json.loads(item)
                    chunks += 1
                    if msg.get("usage"):
                        usage = msg["usage"]
                    for choice in msg.get("choices") or []:
                        delta = choice.get("delta") or {}
                        piece = delta.get("content") or ""
                        think = delta.get("reasoning_content") or delta.get("reasoning") or ""
                        if (piece or think) and t_first is None:
                            t_first = now
                        text.append(piece)
                        reasoning.append(think)
                        if choice.get("logprobs"):  # asked for with logprobs=true (prefix_scan)
                            logprobs += choice["logprobs"].get("content") or []
                        finish = choice.get("finish_reason") or finish
            busy += time.perf_counter() - now
        t_last = time.perf_counter()
    finally:
        writer.close()
    if usage is None:
        raise RequestError("the stream ended without a usage chunk: the server ignores stream_options "
                           "include_usage, so token counts cannot be trusted")
    return {"t_send": t_send, "t_first": t_first if t_first is not None else t_last, "t_last": t_last,
            "text": "".join(text), "reasoning": "".join(reasoning), "usage": usage, "finish_reason": finish,
            "chunks": chunks, "client_busy_s": busy, "logprobs": logprobs}


async def chat_logprobs(base_url, body, timeout=600, api_key=None):
    """One chat completion (not streamed) with the log probabilities of its output tokens, as the OpenAI API
    gives them (vLLM and SGLang both): ``{"text", "finish_reason", "usage", "tokens": [{"token", "logprob",
    "top": {token: logprob}}]}``."""
    body = dict(body, stream=False, logprobs=True)
    status, data = await request(base_url.rstrip("/") + "/v1/chat/completions", "POST", body, timeout, api_key)
    if status != 200:
        raise RequestError("HTTP %d: %s" % (status, data[:300].decode(errors="replace")))
    answer = json.loads(data)
    choice = answer["choices"][0]
    content = (choice.get("logprobs") or {}).get("content")
    if content is None:
        raise RequestError("the answer has no logprobs.content: the server ignores logprobs=true")
    return {"text": choice["message"].get("content") or "", "finish_reason": choice.get("finish_reason"),
            "usage": answer.get("usage") or {},
            "tokens": [{"token": t["token"], "logprob": t["logprob"], "top": _by_text(t.get("top_logprobs") or [])}
                       for t in content]}


def _by_text(top):
    """{token text: logprob}; the API names tokens by their text only, so tokens with the same text (pieces of
    one UTF-8 character all read "") are one entry holding their summed probability."""
    out = {}
    for x in top:
        lp = x["logprob"]
        out[x["token"]] = lp if x["token"] not in out else max(out[x["token"]], lp) + math.log1p(
            math.exp(-abs(out[x["token"]] - lp)))
    return out


def parse_metrics(text):
    """Prometheus text to {name: summed value over its label sets}."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, rest = line.rpartition(" ")
        if not name_labels:
            continue
        name = name_labels.split("{", 1)[0]
        try:
            values[name] = values.get(name, 0.0) + float(rest)
        except ValueError:
            continue
    return values


async def engine_metrics(base_url):
    """The server's /metrics, summed per series name."""
    return parse_metrics(await get_text(base_url.rstrip("/") + "/metrics"))


def load_of(m):
    """(running, waiting, finished-request counter) of parsed /metrics."""
    finished = sum(v for k, v in m.items() if k.startswith("vllm:request_success") and k.endswith("_total"))
    return m.get("vllm:num_requests_running", 0.0), m.get("vllm:num_requests_waiting", 0.0), finished


async def engine_load(base_url):
    """(running, waiting, finished-request counter) from the server's /metrics."""
    return load_of(await engine_metrics(base_url))
