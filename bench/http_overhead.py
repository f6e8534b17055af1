#!/usr/bin/env python3
"""What the HTTP API adds per request over the native protocol (stdlib only).

usage: bench/http_overhead.py NATIVE_SOCKET HTTP_SOCKET [--requests N] [--tokens T]
Sends the same greedy chat request N times on each path, interleaved (A/B) so machine noise
hits both alike, a new connection per request on both; prints the median and p95 wall time
per request for each and the median difference."""
import argparse, json, os, socket, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load import one  # the native GenerateStream client

def http_once(path, prompt, tokens):
    body = json.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": tokens,
                       "temperature": 0, "stream": True}).encode()
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    t0 = time.perf_counter()
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    data = b""
    while not data.endswith(b"0\r\n\r\n"):
        chunk = s.recv(65536)
        if not chunk: break
        data += chunk
    s.close()
    if b"data: [DONE]" not in data: raise RuntimeError(data[:300].decode(errors="replace"))
    return time.perf_counter() - t0

def main():
    a = argparse.ArgumentParser(); a.add_argument("native"); a.add_argument("http")
    a.add_argument("--requests", type=int, default=50); a.add_argument("--tokens", type=int, default=1)
    o = a.parse_args(); prompt = "Tell me something about the sea"
    http_once(o.http, prompt, o.tokens); one(o.native, prompt, o.tokens, None)  # warm the cache
    native, http = [], []
    for _ in range(o.requests):
        t0 = time.perf_counter(); one(o.native, prompt, o.tokens, None); native.append(time.perf_counter() - t0)
        http.append(http_once(o.http, prompt, o.tokens))
    ms = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000
    diffs = [h - n for h, n in zip(http, native)]
    print(f"requests={o.requests} tokens={o.tokens}")
    print(f"native: p50 {ms(native, 0.5):.2f} ms  p95 {ms(native, 0.95):.2f} ms")
    print(f"http:   p50 {ms(http, 0.5):.2f} ms  p95 {ms(http, 0.95):.2f} ms")
    print(f"http - native, median of paired differences: {statistics.median(diffs) * 1000:+.2f} ms")

if __name__ == "__main__":
    main()
