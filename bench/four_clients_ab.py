#!/usr/bin/env python3
"""The serving table's 4-client row alone, for more rounds: llmd native, llmd HTTP and
llama-server on one model, round after round in a rotating order (as scripts/bench does), so a
slow minute of a shared machine falls on all three alike. Each round: 4 clients, each sending 4
chat requests of 64 tokens one after the other; the aggregate is all tokens over the wall time,
and TTFT's p95 over every round.

  python3 bench/four_clients_ab.py MODEL.gguf [ROUNDS]   (build/ must hold llmd and llama-server)
"""
import os
import statistics
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402

CLIENTS, REQUESTS, TOKENS = 4, 4, 64


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    model, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    o = types.SimpleNamespace(model=model, threads=2, llmd=f"{root}/build/src/llmd",
                              llama_server=f"{root}/build/bin/llama-server")
    c = suite.Contenders(o, tempfile.mkdtemp(prefix="llmd-ab4-"), parallel=CLIENTS, context=2048)
    llmd, server = c.start_llmd(), c.start_server()
    contenders = [("llmd-native", llmd, "native"), ("llmd-http", llmd, "http"), ("llama-server", server, "http")]
    results = {name: [] for name, _, _ in contenders}
    ttfts = {name: [] for name, _, _ in contenders}
    try:
        for name, target, kind in contenders:
            suite.clients_round(target, kind, c.key, CLIENTS, REQUESTS, TOKENS, "warm-up")
        for rep in range(rounds):
            for name, target, kind in contenders[rep % 3:] + contenders[:rep % 3]:
                tok_s, replies = suite.clients_round(target, kind, c.key, CLIENTS, REQUESTS, TOKENS, rep)
                results[name].append(tok_s)
                ttft = statistics.median(r["ttft"] for r in replies)
                ttfts[name] += [r["ttft"] for r in replies]
                print(f"round {rep} {name}: {tok_s:.1f} tok/s, TTFT p50 {ttft * 1000:.0f} ms", flush=True)
    finally:
        llmd.stop()
        server.stop()
    server_median = statistics.median(results["llama-server"])
    for name, values in results.items():
        med = statistics.median(values)
        print(f"{name:13} {' '.join(f'{v:.1f}' for v in values)}  median {med:.1f}  "
              f"vs llama-server {med / server_median:.2f}  TTFT p95 {suite.pct(ttfts[name], 0.95) * 1000:.0f} ms "
              f"(llama-server {suite.pct(ttfts['llama-server'], 0.95) * 1000:.0f})")


if __name__ == "__main__":
    main()
