#!/usr/bin/env python3
"""Long contexts: llmd on its defaults vs llama-bench vs llama-server on its defaults.

Every contender gets the same model file and threads. llmd runs as shipped (`--context 0`: the
automatic context, one KV pool the 4 sequences share), llama-server as shipped (`-c 0`: the
trained context fitted to memory, 4 slots over one unified KV cache); the report prints both
pool sizes. Rows, each once per contender, in this order:
  1. cold prefill of 128, 4k, 8k and 16k tokens (random words, nothing cached): tok/s from the
     server's own prefill time (llmd's Ollama /api/chat durations, llama-server's `timings`;
     llama-bench -p, run right after each llmd request: this machine's speed drifts over
     minutes, so llmd / llama-bench is the median of such pairs, 3 up to 4k tokens);
  2. decode at that depth: the same request then generates `tg` tokens (llama-bench -d);
  3. RSS above the model file right after each size's request (VmRSS, MiB);
  4. a second turn: an 8k system prompt, a question and its answer, then a new question:
     TTFT cold (turn 1) and of turn 2 (client side, streamed, OpenAI chat over TCP);
  5. an agent-shaped request: a 10k-token system prompt, 20 tools, streamed: TTFT cold and of
     its second turn (the first delta of any kind: text, reasoning or a tool call);
  6. (dense models) 4-client serving, llmd's pool vs llmd with a cache per sequence
     (`--context 2048`, the previous default), interleaved: scripts/bench's 4-client row.
Run through scripts/bench --long [--hybrid] [--quick]; writes OUT/long.json and OUT/long.txt.
"""
import argparse, http.client, json, os, re, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import (ROOT, Contenders, clients_round, http_request, machine, med, native_request, pct, progress,
                   text_of, write_results)
from footprint import load_average

PARALLEL = 4


def prompt_of(tokens, seed, base):
    """Random words that make a chat prompt of about `tokens` tokens (each word is one token;
    `base`: the template's own tokens)."""
    return text_of(max(1, tokens - base), seed)


def tools(n):
    """n small function tools, as an agent framework sends them."""
    return [{"type": "function", "function": {
        "name": f"tool_{i}", "description": f"Does task number {i} on a file of the project.",
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "the file"},
            "count": {"type": "integer", "description": "how many times"}}, "required": ["path"]}}}
        for i in range(n)]


def llmd_context(server):
    """The context llmd chose (its pool, or each sequence's), from its model_loaded log line."""
    text = open(server.log_path).read()
    m = re.search(r'"?context"?[=:]\s*"?(\d+)', text[text.find("model_loaded"):])
    return int(m.group(1)) if m else None


def server_context(server):
    """llama-server's n_ctx from /props (with its unified KV, one slot may use all of it)."""
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    c.request("GET", "/props"); r = c.getresponse(); body = json.loads(r.read()); c.close()
    return (body.get("default_generation_settings") or {}).get("n_ctx")


def ollama_chat(port, key, user, max_tokens):
    """One greedy, unstreamed Ollama chat on llmd: its reply with the daemon's durations."""
    body = json.dumps({"messages": [{"role": "user", "content": user}], "stream": False, "think": False,
                       "options": {"num_predict": max_tokens, "temperature": 0}})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=1200)
    c.request("POST", "/api/chat", body, {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = c.getresponse(); data = r.read(); c.close()
    if r.status != 200:
        raise RuntimeError(f"/api/chat: HTTP {r.status}: {data[:300]!r}")
    return json.loads(data)


def llmd_prefill(o, server, n, base, seed):
    """One cold llmd request of about n prompt tokens, then o.tg decoded (Ollama's /api/chat:
    the daemon's own prefill and decode times, and no frame limit; the native protocol's is
    64 KiB, under a 16k-token prompt)."""
    r = ollama_chat(server.port, o.key, prompt_of(n, seed, base), o.tg)
    prefill_s = r["prompt_eval_duration"] / 1e9
    decode = (r["eval_count"] - 1) / (r["eval_duration"] / 1e9) if r["eval_count"] > 1 and r["eval_duration"] > 0 else None
    return {"prompt_tokens": r["prompt_eval_count"], "computed": r["prompt_eval_count"],
            "prefill_tps": r["prompt_eval_count"] / prefill_s if prefill_s > 0 else None, "decode_tps": decode,
            "decoded": r["eval_count"]}


def server_prefill(o, server, n, base, seed):
    r = http_request(server.port, o.key, [{"role": "user", "content": prompt_of(n, seed, base)}], o.tg, {"ignore_eos": True})
    t = r["timings"] or {}
    computed, prefill_s = t.get("prompt_n", 0), t.get("prompt_ms", 0) / 1000
    return {"prompt_tokens": r["prompt_tokens"], "computed": computed,
            "prefill_tps": computed / prefill_s if prefill_s > 0 else None,
            "decode_tps": t.get("predicted_per_second") if r["tokens"] > 1 else None, "decoded": r["tokens"]}


def llama_bench(o, *args):
    lb = subprocess.run([o.llama_bench, "-m", o.model, "-t", str(o.threads), "-r", "1", "-o", "json", *args],
                        capture_output=True, text=True, check=True)
    return json.loads(lb.stdout)[0]["avg_ts"]


def prefill_rows(o, who, server, file_mib, base):
    """Cold prefill and decode at each size; RSS above the file after each. For llmd, each
    request is paired with llama-bench at the same size right after it (this VM's speed drifts
    by a tenth or more over minutes, so only neighbours compare), o.prefill_reps times up to
    4,096 tokens and once above; the ratio is the median of the pairs' ratios."""
    rows, bench = {}, {}
    for n in o.sizes:
        reps = o.prefill_reps if who == "llmd" and n <= 4096 else 1
        runs, pairs = [], []
        for rep in range(reps):
            progress(f"  {who}: cold prefill of {n} tokens, then {o.tg} decoded ({rep + 1} of {reps})")
            seed = (who, n, rep, time.time())
            r = llmd_prefill(o, server, n, base, seed) if who == "llmd" else server_prefill(o, server, n, base, seed)
            # Right after the request: llama-bench's run after it can outlast llmd's idle
            # release (5 minutes), which would show the memory after the release instead.
            r["rss_over_file_mib"] = server.rss_mib() - file_mib
            runs.append(r)
            if who == "llmd":
                progress(f"  llama-bench: -p {n}")
                b = llama_bench(o, "-p", str(n), "-n", "0")
                pairs.append((r["prefill_tps"], b))
        row = dict(runs[-1])
        row["prefill_tps"] = med([r["prefill_tps"] for r in runs if r["prefill_tps"]])
        row["prefill_runs"] = [r["prefill_tps"] for r in runs]
        rows[n] = row
        if who == "llmd":
            entry = {"prefill_tps": med([b for _, b in pairs]), "prefill_runs": [b for _, b in pairs],
                     "prefill_ratio": med([a / b for a, b in pairs if a and b])}
            if n in o.depths:
                progress(f"  llama-bench: -n {o.tg} -d {n}")
                entry["decode_tps"] = llama_bench(o, "-p", "0", "-n", str(o.tg), "-d", str(n))
            bench[n] = entry
    return rows, bench


def turns(o, who, server, system, extra, label):
    """Turn 1 cold and turn 2 on the same prefix: both TTFTs (client side, to the first delta
    of any kind) and what turn 2 computed. Turn 2's assistant message is fixed text, the same
    for both contenders whatever turn 1 said (a tool call or words)."""
    progress(f"  {who}: {label}, two turns")
    first = [{"role": "system", "content": system}, {"role": "user", "content": "Which word comes first?"}]
    r1 = http_request(server.port, o.key, first, o.turn_tokens, extra)
    second = first + [{"role": "assistant", "content": "The first word is in the text."},
                      {"role": "user", "content": "And which word comes last?"}]
    r2 = http_request(server.port, o.key, second, o.turn_tokens, extra)
    computed = r2.get("computed")
    if computed is None and r2.get("prompt_tokens") is not None:
        computed = r2["prompt_tokens"] - (r2.get("cached") or 0)
    return {"cold_ttft": r1["ttft"], "second_ttft": r2["ttft"], "prompt_tokens": r1.get("prompt_tokens"),
            "second_computed": computed}


def serving_pool_vs_per_sequence(o, workdir):
    """scripts/bench's 4-client row on llmd's pool vs a cache per sequence, interleaved."""
    out = {"pool": [], "per-sequence": []}
    for rep in range(o.serving_reps):
        for name, context in (("pool", 0), ("per-sequence", 2048)) if rep % 2 == 0 else \
                             (("per-sequence", 2048), ("pool", 0)):
            progress(f"  serving rep {rep + 1}/{o.serving_reps}: {name}")
            c = Contenders(o, workdir, parallel=PARALLEL, context=context)
            s = c.start_llmd(f"llmd-serving-{name}", extra=("--reserved-sequences", "0"))
            try:
                clients_round(s, "http", c.key, 1, 1, 4, -1)  # warm: the first request pays for pages
                tps, rs = clients_round(s, "http", c.key, PARALLEL, o.requests, o.tokens, rep)
                out[name].append({"tok_s": tps, "ttft_p50": med([r["ttft"] for r in rs]),
                                  "ttft_p95": pct([r["ttft"] for r in rs], 0.95)})
            finally:
                s.stop()
    return out


def run_model(o, workdir):
    file_mib = os.path.getsize(o.model) / 2**20
    res = {"model": os.path.basename(o.model), "file_mib": file_mib, "contenders": {}}
    c = Contenders(o, workdir, parallel=PARALLEL, context=0)
    o.key = c.key
    agent_system = prompt_of(o.agent_tokens, "agent", 0)
    turn_system = prompt_of(o.turn_prefix, "turns", 0)
    agent_extra = {"tools": tools(20), "tool_choice": "auto"}
    for who in ("llmd", "llama-server"):
        progress(f"{res['model']}: {who}")
        s = c.start_llmd("llmd-long") if who == "llmd" else c.start_server("llama-server-long")
        try:
            pool = llmd_context(s) if who == "llmd" else server_context(s)
            base = native_request(s.native, "river", 1)["prompt_tokens"] - 1 if who == "llmd" else 12
            entry = {"pool_tokens": pool, "idle_rss_over_file_mib": s.rss_mib() - file_mib}
            entry["sizes"], bench = prefill_rows(o, who, s, file_mib, base)
            if who == "llmd":
                res["contenders"]["llama-bench"] = {"sizes": bench}
            entry["turns"] = turns(o, who, s, turn_system, {}, f"a {o.turn_prefix}-token prefix")
            entry["agent"] = turns(o, who, s, agent_system, agent_extra, f"agent-shaped ({o.agent_tokens} tokens, 20 tools)")
            entry["peak_rss_over_file_mib"] = s.rss_mib("VmHWM") - file_mib
            res["contenders"][who] = entry
        finally:
            s.stop()
    if not o.hybrid:
        res["serving"] = serving_pool_vs_per_sequence(o, workdir)
    return res


def fmt(x, unit="", digits=1):
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}{unit}"


def ratio(a, b):
    return a / b if a and b else None


def report(o, res):
    c = res["contenders"]
    llmd, server, bench = c["llmd"], c["llama-server"], c["llama-bench"]
    lines = [f"Long contexts (--long): {res['model']}, {o.threads} threads, {PARALLEL} sequences; "
             f"{res['machine']['cpu']}, {res['machine']['cores']} cores; commit {res['machine']['llmd_commit']}; {res['time']}",
             f"Pools: llmd {llmd['pool_tokens']} tokens (--context 0), llama-server {server['pool_tokens']} (-c 0). "
             f"File {res['file_mib']:.0f} MiB; RSS above it idle: llmd {fmt(llmd['idle_rss_over_file_mib'])}, "
             f"llama-server {fmt(server['idle_rss_over_file_mib'])} MiB.", "",
             "| tokens | prefill tok/s llmd | llama-bench | llama-server | llmd / llama-bench | "
             "decode tok/s llmd | llama-bench | llama-server | llmd / llama-bench | RSS over file llmd | llama-server |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    targets = []
    for n in o.sizes:
        L, B, S = llmd["sizes"][n], bench["sizes"].get(n, {}), server["sizes"][n]
        bd = bench["sizes"].get(n, {}).get("decode_tps") if n in o.depths else None
        pr, dr = B.get("prefill_ratio"), ratio(L["decode_tps"], bd)
        lines.append(f"| {n:,} | {fmt(L['prefill_tps'])} | {fmt(B.get('prefill_tps'))} | {fmt(S['prefill_tps'])} | "
                     f"{fmt(pr, 'x', 2)} | {fmt(L['decode_tps'])} | {fmt(bd)} | {fmt(S['decode_tps'])} | {fmt(dr, 'x', 2)} | "
                     f"{fmt(L['rss_over_file_mib'], ' MiB', 0)} | {fmt(S['rss_over_file_mib'], ' MiB', 0)} |")
        targets.append((pr is not None and pr >= 0.97, f"prefill {n}: llmd >= 0.97x llama-bench: {fmt(pr, '', 2)}"))
        if dr is not None:
            targets.append((dr >= 0.97, f"decode at depth {n}: llmd >= 0.97x llama-bench: {fmt(dr, '', 2)}"))
        targets.append((L["rss_over_file_mib"] <= S["rss_over_file_mib"],
                        f"RSS above the file at {n}: llmd <= llama-server: {fmt(L['rss_over_file_mib'], '', 0)} vs "
                        f"{fmt(S['rss_over_file_mib'], '', 0)} MiB"))
    lines += ["", f"Prefill: llmd / llama-bench is the median of {o.prefill_reps} pairs up to 4,096 tokens and one "
              "above, each llama-bench run right after llmd's request; the tok/s columns are medians.",
              "", "| turns | contender | prompt tokens | TTFT cold | TTFT turn 2 | turn 2 / cold | turn 2 computed |",
              "|---|---|---|---|---|---|---|"]
    for key, label in (("turns", f"{o.turn_prefix}-token prefix"), ("agent", f"agent: {o.agent_tokens}-token system, 20 tools")):
        for who, e in (("llmd", llmd), ("llama-server", server)):
            t = e[key]
            lines.append(f"| {label} | {who} | {t['prompt_tokens']} | {t['cold_ttft'] * 1000:,.0f} ms | "
                         f"{t['second_ttft'] * 1000:,.0f} ms | {t['second_ttft'] / t['cold_ttft']:.3f} | {t['second_computed']} |")
        lt, st = llmd[key], server[key]
        targets.append((lt["second_ttft"] <= 0.1 * lt["cold_ttft"],
                        f"{label}: turn-2 TTFT <= 0.1x cold: {lt['second_ttft'] / lt['cold_ttft']:.3f}"))
        targets.append((lt["second_ttft"] <= st["second_ttft"],
                        f"{label}: turn-2 TTFT <= llama-server's: {lt['second_ttft'] * 1000:,.0f} vs "
                        f"{st['second_ttft'] * 1000:,.0f} ms"))
    if "serving" in res:
        sv = res["serving"]
        lines += ["", f"4-client serving (4 clients x {o.requests} chats of {o.tokens} tokens, HTTP, --reserved-sequences 0):", "",
                  "| llmd KV | tok/s | TTFT p50 | TTFT p95 |", "|---|---|---|---|"]
        for name in ("pool", "per-sequence"):
            rows = sv[name]
            rates = ", ".join(f"{r['tok_s']:.1f}" for r in rows)
            lines.append(f"| {name} | {rates} | "
                         f"{med([r['ttft_p50'] for r in rows]) * 1000:,.0f} ms | {med([r['ttft_p95'] for r in rows]) * 1000:,.0f} ms |")
        pool, per = med([r["tok_s"] for r in sv["pool"]]), med([r["tok_s"] for r in sv["per-sequence"]])
        targets.append((pool >= 0.97 * per, f"4-client serving on the pool >= 0.97x per sequence: {pool / per:.2f} "
                                             f"({pool:.1f} vs {per:.1f} tok/s)"))
    lines += ["", f"Load average at start: {res['load_start']['loadavg']}, at end: {res['load_end']['loadavg']}", "",
              "Targets (reported, never enforced):", ""]
    lines += [f"- [{'met' if ok else 'NOT met'}] {text}" for ok, text in targets]
    return "\n".join(lines)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--model", required=True)
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    a.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    a.add_argument("--hybrid", action="store_true", help="the model is hybrid: no serving row (its pool is split)")
    a.add_argument("--prefill-reps", type=int, default=3,
                   help="llmd/llama-bench prefill pairs at each size up to 4,096 tokens (default 3)")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-results"))
    o = a.parse_args()
    b = o.build
    o.llmd, o.llama_bench = os.path.join(b, "src", "llmd"), os.path.join(b, "bin", "llama-bench")
    o.llama_server = os.path.join(b, "bin", "llama-server")
    if o.quick:
        o.sizes, o.depths, o.tg, o.turn_prefix, o.agent_tokens = [128, 512, 1024], [512, 1024], 8, 512, 1024
        o.turn_tokens, o.serving_reps, o.requests, o.tokens = 4, 1, 1, 8
        o.prefill_reps = 1
    else:
        o.sizes, o.depths, o.tg, o.turn_prefix, o.agent_tokens = [128, 4096, 8192, 16384], [8192, 16384], 32, 8192, 10000
        o.turn_tokens, o.serving_reps, o.requests, o.tokens = 16, 2, 4, 64
    o.reps = 1  # every row once (machine() records it), but the paired prefill rows up to 4,096 tokens
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "work-long")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    res = {"machine": machine(o), "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "load_start": load_average()}
    progress(f"{res['machine']['model']}, {o.threads} threads; logs in {workdir}")
    res.update(run_model(o, workdir))
    res["load_end"] = load_average()
    table = report(o, res)
    stem = "long-hybrid" if o.hybrid else "long"
    write_results(o.out, stem, res, table)
    progress(f"wrote {o.out}/{stem}.json and {stem}.txt")


if __name__ == "__main__":
    main()
