#!/usr/bin/env python3
"""What speculative decoding costs when it does not pay: llmd with a draft model against llmd
without, interleaved off/on/on/off/off/on/on/off, N greedy 128-token requests each, one stream.

  python3 bench/speculative_cost.py --model TARGET.gguf --draft DRAFT.gguf [--requests 3]

Prints each run's tok/s and the medians over all requests, off and on.
"""
import argparse, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import speculative  # noqa: E402
from suite import Contenders, ROOT, text_of  # noqa: E402


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--model", required=True)
    a.add_argument("--draft", required=True)
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--requests", type=int, default=3)
    o = a.parse_args()
    o.llmd = os.path.join(o.build, "src", "llmd")
    work = os.path.join(o.build, "bench-speculative-cost")
    os.makedirs(work, exist_ok=True)
    on = ["--speculative", "draft", "--draft-model", o.draft, "--draft-max", "4"]
    rates = {"off": [], "on": []}
    c = Contenders(o, work, parallel=4, context=1024)
    for name in ("off", "on", "on", "off", "off", "on", "on", "off"):
        s = c.start_llmd(extra=on if name == "on" else [])
        try:
            speculative.stream(s.port, c.key, "warm up", 8, 0)
            runs = [speculative.stream(s.port, c.key, text_of(12, f"cost-{i}"), 128, i) for i in range(o.requests)]
        finally:
            s.stop()
        got = [(r["tokens"] - 1) / r["decode_s"] for r in runs]
        rates[name] += got
        print(name, " ".join(f"{x:.1f}" for x in got), "drafted/accepted",
              [(r["drafted"], r["accepted"]) for r in runs], flush=True)
    off, on_ = statistics.median(rates["off"]), statistics.median(rates["on"])
    print(f"median tok/s: off {off:.2f}, on {on_:.2f}, on/off {on_ / off:.3f}")


if __name__ == "__main__":
    main()
