#!/usr/bin/env python3
"""TTFT of a cold chat, the same chat again, another question on the same system prompt, and
two follow-up turns, for two llmd builds on one model, in alternating rounds (best of each).

    bench/turns_ab.py MODEL BASE_LLMD NEW_LLMD [ROUNDS]

Each round starts a fresh daemon per build (2 threads, its own socket folder under /tmp), so
the cache holds only what the round sent. Stdlib only.
"""
import json, os, subprocess, sys, tempfile, time, socket, http.client

class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path): super().__init__("localhost"); self.path_ = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(self.path_)

def chat(sock, messages, n=32):
    c = UnixHTTP(sock)
    body = json.dumps({"messages": messages, "max_tokens": n, "temperature": 0, "stream": True})
    t0 = time.time(); c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse(); ttft = None; text = ""
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]": continue
        d = json.loads(line[6:])
        delta = d["choices"][0]["delta"] if d.get("choices") else {}
        piece = delta.get("content") or delta.get("reasoning_content")
        if piece:
            if ttft is None: ttft = time.time() - t0
            text += delta.get("content") or ""
    return ttft * 1000, text

def start(binary, d):
    p = subprocess.Popen([binary, "--model", sys.argv[1], "--socket", d + "/llm.sock", "--threads", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            c = UnixHTTP(d + "/http.sock"); c.request("GET", "/health"); 
            if c.getresponse().status == 200: break
        except OSError: pass
        time.sleep(0.1)
    return p

system = "You are a careful assistant for a small library. " * 20
res = {}
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
for rnd in range(rounds):
    for name, binary in [("base", sys.argv[2]), ("new", sys.argv[3])]:
        d = tempfile.mkdtemp(prefix="llmd-turns-")
        p = start(binary, d)
        s = d + "/http.sock"
        m = [{"role": "system", "content": system}, {"role": "user", "content": "When do you open on Sunday?"}]
        cold, t1 = chat(s, m)
        resend, _ = chat(s, m)
        other, _ = chat(s, [m[0], {"role": "user", "content": "How late is the fee?"}])
        m2 = m + [{"role": "assistant", "content": t1}, {"role": "user", "content": "And on Monday?"}]
        turn2, t2 = chat(s, m2)
        m3 = m2 + [{"role": "assistant", "content": t2}, {"role": "user", "content": "Thanks."}]
        turn3, _ = chat(s, m3)
        p.terminate(); p.wait()
        for k, v in [("cold", cold), ("resend", resend), ("other question", other), ("turn 2", turn2), ("turn 3", turn3)]:
            res.setdefault((name, k), []).append(v)
for k in ["cold", "resend", "other question", "turn 2", "turn 3"]:
    b = min(res[("base", k)]); n = min(res[("new", k)])
    print(f"{k:16s} base {b:8.1f} ms   new {n:8.1f} ms   new/base {n/b:5.2f}")
