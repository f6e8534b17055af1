#!/usr/bin/env python3
"""Where a daemon's compute went: its `decode_call` debug lines (LLMD_LOG_LEVEL=debug) summed by
class (the highest in the call: its standing), kind (prompt, decode, or both) and outcome; and the
interactive class's own part of the decode calls it led, taking it to hold one sequence of each
(1/n of a call of n sequences: the qos scenario's one person).

    LLMD_LOG_LEVEL=debug python3 bench/qos.py ... --rows load4 --out DIR
    python3 bench/decode_calls.py DIR/qos-work/llmd-classes.log DIR/qos-work/llmd-off.log

"Lost" is the time of calls stopped for an arrival (their work is thrown away and redone).
"""
import collections
import re
import sys

CLASSES = ["interactive", "normal", "background", "none"]


def summarize(path):
    calls = collections.defaultdict(lambda: [0, 0.0, 0])  # (class, kind, outcome) -> n, ms, tokens
    own = 0.0  # the interactive sequence's 1/n of each decode call it led
    sequences = collections.defaultdict(lambda: [0, 0.0])  # decode calls: sequences -> n, ms
    for line in open(path, errors="replace"):
        if " decode_call " not in line:
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        klass = CLASSES[min(int(kv["standing"]) // 3, 3)]
        tokens, prompt, ms = int(kv["tokens"]), int(kv["prompt_tokens"]), float(kv["ms"])
        kind = "prompt" if prompt == tokens else "decode" if prompt == 0 else "both"
        c = calls[(klass, kind, kv["outcome"])]
        c[0] += 1
        c[1] += ms
        c[2] += tokens
        if kind == "decode" and kv["outcome"] in ("ran", "ran_whole"):
            n = len(kv["sequences"].split(","))
            sequences[n][0] += 1
            sequences[n][1] += ms
            if klass == "interactive":
                own += ms / n
    return calls, sequences, own


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        calls, sequences, own = summarize(path)
        total = sum(v[1] for v in calls.values()) or 1.0
        print(f"{path}: {total / 1000:.1f} s in decode calls")
        print(f"  {'class':<12} {'kind':<7} {'outcome':<10} {'calls':>6} {'tokens':>7} {'s':>7} {'share':>6} {'ms/call':>8}")
        for (klass, kind, outcome), (n, ms, tokens) in sorted(calls.items()):
            print(f"  {klass:<12} {kind:<7} {outcome:<10} {n:>6} {tokens:>7} {ms / 1000:>7.1f} {ms / total:>6.1%} {ms / n:>8.1f}")
        lost = sum(v[1] for k, v in calls.items() if k[2] == "stopped")
        person = own + sum(v[1] for k, v in calls.items() if k[0] == "interactive" and k[1] == "prompt")
        print(f"  interactive: its prompts and 1/n of its decode calls: {person / 1000:.1f} s ({person / total:.1%})")
        print(f"  lost to stops: {lost / 1000:.1f} s ({lost / total:.1%})")
        print("  decode calls by sequences: " + ", ".join(
            f"{n}: {c} x {ms / c:.1f} ms" for n, (c, ms) in sorted(sequences.items())))


if __name__ == "__main__":
    main()
