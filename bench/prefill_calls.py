#!/usr/bin/env python3
"""A cold prefill call by call: llmd's prompt calls (its `decode_call` debug lines: the time
inside llama.cpp's llama_decode) against llama-bench's 512-token micro-batch at the same depth
(`-p 512 -d D`), each call side by side, the two runs back to back and alternating per round.

A whole-prefill ratio on a shared VM moves by a tenth or more from one pair to the next; this
says whether a gap sits in some calls (a depth, a kernel) or in none.

    python3 bench/prefill_calls.py MODEL [TOKENS] [THREADS] [ROUNDS] [EVERY]

TOKENS defaults to 4096 (a multiple of 512), THREADS to 2, ROUNDS to 1. EVERY (a multiple of
512, default 512) pairs only the calls that start at its multiples: llama-bench fills each depth
anew, so at 16k every call would cost it 256k tokens of fill. Builds nothing: run after
`cmake --build build --target llmd llama-bench` (scripts/bench builds both).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import long as L  # noqa: E402
from suite import Contenders, native_request  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UBATCH = 512


def llmd_calls(o, workdir, tokens):
    """One cold chat request of about `tokens` prompt tokens on a fresh daemon: its prompt calls'
    (tokens, ms), in order, and its prefill clock's tok/s."""
    c = Contenders(o, workdir, 4, 0)
    o.key = c.key
    s = c.start_llmd("llmd", extra=("--log-level", "debug"))
    try:
        base = native_request(s.native, "river", 1)["prompt_tokens"] - 1  # the template's tokens, as long.py
        warm = os.path.getsize(s.log_path)  # the load's warm-up call and that probe are not the request's
        r = L.llmd_prefill(o, s, L.prompt_of(tokens, 11, base), 1)
    finally:
        s.stop()
    calls = []
    with open(s.log_path, errors="replace") as f:
        f.seek(warm)
        for line in f:
            if " decode_call " not in line:
                continue
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            if kv["outcome"] in ("ran", "ran_whole") and kv["tokens"] == kv["prompt_tokens"]:
                calls.append((int(kv["tokens"]), float(kv["ms"])))
    return calls, r["prefill_tps"]


def bench_calls(o, depths):
    """llama-bench's ms for a 512-token micro-batch at each depth (one run each)."""
    args = [o.llama_bench, "-m", o.model, "-t", str(o.threads), "-o", "json", "-p", str(UBATCH), "-n", "0",
            "-r", "1", "-b", str(UBATCH), "-d", ",".join(map(str, depths))]
    out = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return {t["n_depth"]: UBATCH * 1000.0 / t["samples_ts"][0] for t in out}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    model = sys.argv[1]
    tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    every = int(sys.argv[5]) if len(sys.argv) > 5 else UBATCH
    build = os.path.join(ROOT, "build")
    o = SimpleNamespace(model=model, threads=threads, llmd=os.path.join(build, "src", "llmd"),
                        llama_bench=os.path.join(build, "bin", "llama-bench"),
                        llama_server=os.path.join(build, "bin", "llama-server"))
    depths = list(range(0, tokens, every))
    for rnd in range(rounds):
        with tempfile.TemporaryDirectory() as workdir:
            # Alternate who goes first: the VM's drift over a round falls on each side in turn.
            if rnd % 2 == 0:
                calls, tps = llmd_calls(o, workdir, tokens)
                bench = bench_calls(o, depths)
            else:
                bench = bench_calls(o, depths)
                calls, tps = llmd_calls(o, workdir, tokens)
        print(f"round {rnd + 1}: {os.path.basename(model)}, {threads} threads, llmd's prefill clock {tps:.1f} tok/s")
        print(f"  {'depth':>6} {'llmd call':>16} {'llama-bench 512':>16} {'llama-bench / llmd':>19}")
        depth, total_llmd, total_bench, unpaired = 0, 0.0, 0.0, 0.0
        for n, ms in calls:
            # A short call (at a checkpoint or a message start) has no micro-batch to pair with.
            if n < 64 or depth not in bench:
                unpaired += ms
                print(f"  {depth:>6} {f'{n} tok {ms:.0f} ms':>16} {'':>16}")
            else:
                b = bench[depth] * n / UBATCH
                total_llmd, total_bench = total_llmd + ms, total_bench + b
                print(f"  {depth:>6} {f'{n} tok {ms:.0f} ms':>16} {f'{b:.0f} ms':>16} {b / ms:>18.2f}x")
            depth += n
        print(f"  paired calls: llmd {total_llmd / 1000:.1f} s, llama-bench {total_bench / 1000:.1f} s: "
              f"{total_bench / total_llmd:.3f}x; llmd's other calls: {unpaired / 1000:.1f} s")


if __name__ == "__main__":
    main()
