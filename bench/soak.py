#!/usr/bin/env python3
"""Soak: llmd at full concurrency for a long time, watching for drift (robustness item 25).

usage: bench/soak.py [--minutes M] [--clients N] [--model FILE] [--build DIR]
Starts llmd (4 slots, the given threads), runs N native streaming clients with mixed prompt
and reply lengths until the time is up, and prints one JSON line a minute: RSS, open
descriptors, tokens/s since the last line, requests and errors so far. Flat RSS and
descriptors, steady tok/s and zero errors are what a healthy daemon shows."""
import argparse, json, os, random, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite

def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--minutes", type=float, default=60); a.add_argument("--clients", type=int, default=4)
    a.add_argument("--build", default=os.path.join(root, "build"))
    a.add_argument("--model", default=os.path.join(root, "build", "testmodels", "qwen3-0.6b-q4_0.gguf"))
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    o = a.parse_args()
    o.llmd, o.llama_server = os.path.join(o.build, "src", "llmd"), None
    work = tempfile.mkdtemp(prefix="llmd-soak-")
    daemon = suite.Contenders(o, work, 4, 2048).start_llmd()
    end = time.time() + o.minutes * 60
    stats, lock = {"requests": 0, "tokens": 0, "errors": 0}, threading.Lock()

    def client(i):
        rng = random.Random(i)
        while time.time() < end:
            try:
                r = suite.native_request(daemon.native, f"Client {i} {time.time()}: " +
                                         suite.text_of(rng.randint(5, 200), rng.random()), rng.choice([8, 32, 64, 128]))
                with lock:
                    stats["requests"] += 1; stats["tokens"] += r["tokens"]
            except Exception:
                with lock:
                    stats["errors"] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(o.clients)]
    [t.start() for t in threads]
    start, last, last_t = time.time(), 0, time.time()
    try:
        while time.time() < end:
            time.sleep(min(60, max(0, end - time.time())))
            with lock:
                s = dict(stats)
            now = time.time()
            print(json.dumps({"minute": round((now - start) / 60, 1), "rss_mib": round(daemon.rss_mib()),
                              "fds": len(os.listdir(f"/proc/{daemon.proc.pid}/fd")),
                              "tok_s": round((s["tokens"] - last) / max(1e-9, now - last_t), 1), **s}), flush=True)
            last, last_t = s["tokens"], now
        [t.join() for t in threads]
    finally:
        daemon.stop()

if __name__ == "__main__":
    main()
