#!/usr/bin/env python3
"""Concurrent streaming clients against llmd's native socket (stdlib only).

usage: bench/load.py SOCKET [--clients N] [--requests R] [--tokens T] [--system TEXT]
Each client sends R GenerateStream requests (greedy) one after another; prints aggregate
generated tok/s over the wall time and p50/p95 time to first token."""
import argparse, socket, struct, threading, time

def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80); n >>= 7
    out.append(n)
    return bytes(out)

def pstr(s):
    b = s.encode(); return varint(len(b)) + b

def stream_request(prompt, tokens, system):
    params = (b'\x01' + pstr(system) if system is not None else b'\x00')
    params += b'\x01' + struct.pack('<f', 0.0) + b'\x00' * 7  # temperature 0, rest unset
    return b'\x03' + pstr(prompt) + b'\x01' + varint(tokens) + params

def read_frame(sock):
    hdr = b''
    while len(hdr) < 4:
        chunk = sock.recv(4 - len(hdr))
        if not chunk: raise EOFError
        hdr += chunk
    n = struct.unpack('>I', hdr)[0]; body = b''
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk: raise EOFError
        body += chunk
    return body

def uvarint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7F) << s; s += 7
        if c < 0x80: return v, i

def one(path, prompt, tokens, system):
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    t0 = time.time(); body = stream_request(prompt, tokens, system)
    s.sendall(struct.pack('>I', len(body)) + body)
    ttft = None
    while True:
        f = read_frame(s)
        if f[0] == 3 and ttft is None: ttft = time.time() - t0
        if f[0] == 4:
            gen, i = uvarint(f, 1); prompt_tokens, i = uvarint(f, i); cached, i = uvarint(f, i)
            s.close(); return ttft if ttft is not None else time.time() - t0, gen, cached, prompt_tokens
        if f[0] == 1: raise RuntimeError(f[2:].decode(errors='replace'))

def main():
    a = argparse.ArgumentParser(); a.add_argument('socket'); a.add_argument('--clients', type=int, default=1)
    a.add_argument('--requests', type=int, default=3); a.add_argument('--tokens', type=int, default=64)
    a.add_argument('--system', default=None); a.add_argument('--same-prompt', action='store_true')
    o = a.parse_args(); results = []; lock = threading.Lock()
    def client(c):
        for r in range(o.requests):
            prompt = "Tell me something" if o.same_prompt else f"Client {c} request {r}: tell me about the sea"
            res = one(o.socket, prompt, o.tokens, o.system)
            with lock: results.append(res)
    t0 = time.time(); th = [threading.Thread(target=client, args=(c,)) for c in range(o.clients)]
    [t.start() for t in th]; [t.join() for t in th]; wall = time.time() - t0
    ttfts = sorted(r[0] * 1000 for r in results); gen = sum(r[1] for r in results)
    p = lambda q: ttfts[min(len(ttfts) - 1, int(q * len(ttfts)))]
    print(f"clients={o.clients} requests={len(results)} generated={gen} wall={wall:.2f}s "
          f"aggregate={gen / wall:.1f} tok/s ttft_p50={p(0.5):.0f}ms ttft_p95={p(0.95):.0f}ms "
          f"cached={sum(r[2] for r in results)}/{sum(r[3] for r in results)}")

if __name__ == '__main__':
    main()
