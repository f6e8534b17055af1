#!/usr/bin/env bash
# What the daemon adds over calling the engine directly, for one generation, side by side on
# the same model and threads: wall time per request, time to first token, decode tok/s, peak
# memory; plus the daemon's ready time and idle RSS.
#   bench/daemon_overhead.sh [MODEL] [REPS]   (default: build/testmodels/qwen3-0.6b-q4_0.gguf, 5)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${LLMD_BUILD_DIR:-$root/build}"
model="${1:-$build/testmodels/qwen3-0.6b-q4_0.gguf}"
reps="${2:-5}"
threads=2
tokens=128
prompt="Tell me about the sea"
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT

ms() { date +%s%3N; }

echo "engine direct (bench_engine), $reps runs:"
for i in $(seq "$reps"); do
  t0=$(ms)
  "$build/bench/bench_engine" -m "$model" -t $threads -n $tokens --temperature 0 -p "$prompt" >/dev/null 2>"$dir/e.log"
  t1=$(ms)
  echo "  process wall $((t1 - t0)) ms; $(grep -o 'ttft.*' "$dir/e.log"); $(grep -o 'peak RSS.*' "$dir/e.log")"
done

"$build/src/llmd" --model "$model" --socket "$dir/llm.sock" --threads $threads --temperature 0 2>"$dir/d.log" &
pid=$!
for _ in $(seq 600); do grep -q "llmd info ready" "$dir/d.log" && break; sleep 0.1; done
echo "daemon: $(grep -o 'ready_ms=[0-9]*' "$dir/d.log"), idle RSS $(awk '/VmRSS/{print int($2/1024)}' /proc/$pid/status) MiB, model file $(( $(stat -c %s "$model") / 1048576 )) MiB"
echo "daemon (llmctl generate, streamed), $reps runs:"
for i in $(seq "$reps"); do
  t0=$(ms)
  out=$("$build/tools/llmctl" --socket "$dir/llm.sock" --json generate "$prompt" -n $tokens)
  t1=$(ms)
  python3 - "$out" $((t1 - t0)) <<'PY'
import json, sys
j = json.loads(sys.argv[1]); wall = int(sys.argv[2])
tps = (j["tokens_generated"] - 1) * 1000 / j["decode_ms"] if j["decode_ms"] else 0
print(f"  request wall {wall} ms; ttft {j['ttft_ms']:.1f} ms, {j['tokens_generated']} tokens at {tps:.1f} tok/s, cached {j['cached_tokens']}/{j['prompt_tokens']}")
PY
done
echo "daemon peak RSS $(awk '/VmHWM/{print int($2/1024)}' /proc/$pid/status) MiB"
