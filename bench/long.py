#!/usr/bin/env python3
"""Long contexts: llmd on its defaults vs llama-bench vs llama-server on its defaults.

Every contender gets the same model file and threads. llmd runs as shipped (`--context 0`: the
automatic context, one KV pool the 4 sequences share), llama-server as shipped (`-c 0`: the
trained context fitted to memory, 4 slots over one unified KV cache); the report prints both
pool sizes. This machine's speed drifts by a tenth or more over minutes, so every ratio comes
from neighbours: measurements taken right after each other, in alternating order, and medians.
Rows (--rows chooses; all by default):
  prefill: cold prefill of 128, 4k, 8k and 16k tokens (random words, nothing cached), llmd first
     (tok/s from its own prefill clock: Ollama /api/chat's durations), each request paired with
     llama-bench -p at that size, the pair's order alternating (llmd first, then llama-bench
     first); llmd / llama-bench is the median of the pairs' ratios (--prefill-reps pairs up to
     4k tokens, --deep-reps above). Then llama-server's cold requests (`timings`).
     Decode at 8k and 16k: llama-bench -n tg -d N (--decode-reps runs on one depth prefill),
     then as many llmd requests repeating its last prompt (cached: each decodes tg tokens at
     that depth), so that both sides' decode runs are neighbours; medians.
     RSS above the model file right after each size's request (VmRSS, MiB).
  turns: with both servers up, each gets turn 1 cold, then turn 2 on the same prefix, the two
     servers alternating (--turn-reps times each; each turn 2 changes the first word of the
     assistant's reply, so each computes the same tokens): TTFT cold and turn 2's median
     (client side, streamed, OpenAI chat over TCP, to the first delta of any kind), for
       - an 8k system prompt, a question and its answer, then a new question;
       - an agent-shaped request: a 10k-token system prompt, 20 tools, streamed.
  serving: (dense models) 4-client serving, llmd's pool vs llmd with a cache per sequence
     (`--context 2048`, the previous default), interleaved: scripts/bench's 4-client row.
Run through scripts/bench --long [--hybrid] [--quick]; writes OUT/long.json and OUT/long.txt.
"""
import argparse, http.client, json, os, re, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import (ROOT, Contenders, clients_round, computed_tokens, http_request, machine, med, native_request, pct,
                   progress, text_of, write_results)
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


def llmd_prefill(o, server, user, tg):
    """One llmd request for `user` (cold unless it repeats the last one), then tg decoded
    (Ollama's /api/chat: the daemon's own prefill and decode times, and no frame limit; the
    native protocol's is 64 KiB, under a 16k-token prompt)."""
    r = ollama_chat(server.port, o.key, user, tg)
    prefill_s = r["prompt_eval_duration"] / 1e9
    decode = (r["eval_count"] - 1) / (r["eval_duration"] / 1e9) if r["eval_count"] > 1 and r["eval_duration"] > 0 else None
    return {"prompt_tokens": r["prompt_eval_count"], "computed": r["prompt_eval_count"],
            "prefill_tps": r["prompt_eval_count"] / prefill_s if prefill_s > 0 else None, "decode_tps": decode,
            "decoded": r["eval_count"]}


def server_prefill(o, server, user, tg):
    r = http_request(server.port, o.key, [{"role": "user", "content": user}], tg, {"ignore_eos": True})
    t = r["timings"] or {}
    computed, prefill_s = t.get("prompt_n", 0), t.get("prompt_ms", 0) / 1000
    return {"prompt_tokens": r["prompt_tokens"], "computed": computed,
            "prefill_tps": computed / prefill_s if prefill_s > 0 else None,
            "decode_tps": t.get("predicted_per_second") if r["tokens"] > 1 else None, "decoded": r["tokens"]}


def llama_bench(o, *args):
    """llama-bench's tok/s of each repetition (-r), in order."""
    lb = subprocess.run([o.llama_bench, "-m", o.model, "-t", str(o.threads), "-o", "json", *args],
                        capture_output=True, text=True, check=True)
    return json.loads(lb.stdout)[0]["samples_ts"]


def llmd_prefill_rows(o, server, file_mib, base):
    """llmd's cold prefill and decode at each size, RSS above the file after each, and
    llama-bench as its neighbour: each request paired with llama-bench -p at its size, llmd
    first in the 1st, 3rd, ... pair and llama-bench first in the others (a drift over the pairs'
    minutes then favours neither side in the median). Decode at depth: o.decode_reps runs a
    side, medians."""
    rows, bench = {}, {}
    for n in o.sizes:
        reps = o.prefill_reps if n <= 4096 else o.deep_reps
        entry, decode_runs = {}, None
        if n in o.depths:
            # llama-bench computes the depth (untimed) before its decode runs, so they are the
            # neighbours of llmd's first request and its repeats, which decode at that depth.
            # Not after them: llmd's idle release (5 minutes) would drop the cached prompt.
            progress(f"  llama-bench: -n {o.tg} -d {n} -r {o.decode_reps}")
            entry["decode_runs"] = llama_bench(o, "-p", "0", "-n", str(o.tg), "-d", str(n), "-r", str(o.decode_reps))
            entry["decode_tps"] = med(entry["decode_runs"])
        def bench_prefill(rep):
            progress(f"  llama-bench: -p {n} (pair {rep + 1} of {reps})")
            return llama_bench(o, "-p", str(n), "-n", "0", "-r", "1")[0]

        pairs, r = [], None
        for rep in range(reps):
            b = bench_prefill(rep) if rep % 2 == 1 else None
            progress(f"  llmd: cold prefill of {n} tokens, then {o.tg} decoded (pair {rep + 1} of {reps})")
            user = prompt_of(n, ("llmd", n, rep, time.time()), base)
            r = llmd_prefill(o, server, user, o.tg)
            # Right after the request: a llama-bench run after it can outlast llmd's idle
            # release, which would show the memory after the release instead.
            r["rss_over_file_mib"] = server.rss_mib() - file_mib
            if n in o.depths and decode_runs is None:
                progress(f"  llmd: {o.decode_reps - 1} more x {o.tg} decoded at depth {n} (the same prompt again)")
                decode_runs = [r["decode_tps"]] + [llmd_prefill(o, server, user, o.tg)["decode_tps"]
                                                   for _ in range(o.decode_reps - 1)]
            if rep % 2 == 0:
                b = bench_prefill(rep)
            pairs.append((r["prefill_tps"], b))
        row = dict(r)
        row["prefill_runs"] = [a for a, _ in pairs]
        row["prefill_tps"] = med([a for a, _ in pairs if a])
        entry.update(prefill_runs=[b for _, b in pairs], prefill_tps=med([b for _, b in pairs]),
                     pair_ratios=[a / b for a, b in pairs if a and b])
        entry["prefill_ratio"] = med(entry["pair_ratios"])
        if decode_runs:
            row["decode_runs"], row["decode_tps"] = decode_runs, med([d for d in decode_runs if d])
        rows[n], bench[n] = row, entry
    return rows, bench


def server_prefill_rows(o, server, file_mib, base):
    """llama-server's cold prefill and decode at each size, once, RSS above the file after each."""
    rows = {}
    for n in o.sizes:
        progress(f"  llama-server: cold prefill of {n} tokens, then {o.tg} decoded")
        r = server_prefill(o, server, prompt_of(n, ("llama-server", n, time.time()), base), o.tg)
        r["rss_over_file_mib"] = server.rss_mib() - file_mib
        rows[n] = r
    return rows


# Turn 2's assistant replies: each changes the first word, so that every turn 2 computes the
# same tokens after the cached turn 1 (the system prompt and the first question).
TURN2_REPLIES = ("The first word is in the text.", "That first word is in the text.",
                 "This first word is in the text.", "Its first word is in the text.")


def turns(o, servers, system, extra, label):
    """Turn 1 cold on each server, then o.turn_reps turn 2s on each, the servers alternating
    (first one first, then the other): TTFTs client side, to the first delta of any kind, and
    what each turn 2 computed. The turn-2 assistant messages are fixed text, the same for both
    servers whatever turn 1 said (a tool call or words)."""
    first = [{"role": "system", "content": system}, {"role": "user", "content": "Which word comes first?"}]
    out = {}
    for who, s in servers:
        progress(f"  {who}: {label}, turn 1 (cold)")
        r1 = http_request(s.port, o.key, first, o.turn_tokens, extra)
        out[who] = {"cold_ttft": r1["ttft"], "prompt_tokens": r1.get("prompt_tokens"), "second_ttfts": [],
                    "second_computed_runs": []}
    for k in range(o.turn_reps):
        second = first + [{"role": "assistant", "content": TURN2_REPLIES[k % len(TURN2_REPLIES)]},
                          {"role": "user", "content": "And which word comes last?"}]
        for who, s in (servers if k % 2 == 0 else servers[::-1]):
            progress(f"  {who}: {label}, turn 2 ({k + 1} of {o.turn_reps})")
            r2 = http_request(s.port, o.key, second, o.turn_tokens, extra)
            out[who]["second_ttfts"].append(r2["ttft"])
            out[who]["second_computed_runs"].append(computed_tokens(r2))
    for e in out.values():
        e["second_ttft"] = med(e["second_ttfts"])
        e["second_computed"] = med(e["second_computed_runs"])
    return out


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
    servers = []
    try:
        for who in ("llmd", "llama-server") if {"prefill", "turns"} & set(o.rows) else ():
            progress(f"{res['model']}: {who}")
            s = c.start_llmd("llmd-long") if who == "llmd" else c.start_server("llama-server-long")
            servers.append((who, s))
            entry = {"pool_tokens": llmd_context(s) if who == "llmd" else server_context(s),
                     "idle_rss_over_file_mib": s.rss_mib() - file_mib}
            if "prefill" in o.rows:
                base = native_request(s.native, "river", 1)["prompt_tokens"] - 1 if who == "llmd" else 12
                if who == "llmd":
                    entry["sizes"], bench = llmd_prefill_rows(o, s, file_mib, base)
                    res["contenders"]["llama-bench"] = {"sizes": bench}
                else:
                    entry["sizes"] = server_prefill_rows(o, s, file_mib, base)
                entry["peak_rss_over_file_mib"] = s.rss_mib("VmHWM") - file_mib
            res["contenders"][who] = entry
        if "turns" in o.rows:
            # llama-server's turn 1 first: llmd's cached turn 1 must not sit idle through a
            # cold prefill of minutes (its idle release would drop it); llama-server keeps its slots.
            order = servers[::-1]
            for key, system, extra, label in (
                    ("turns", prompt_of(o.turn_prefix, "turns", 0), {}, f"a {o.turn_prefix}-token prefix"),
                    ("agent", prompt_of(o.agent_tokens, "agent", 0), {"tools": tools(20), "tool_choice": "auto"},
                     f"agent-shaped ({o.agent_tokens} tokens, 20 tools)")):
                for who, e in turns(o, order, system, extra, label).items():
                    res["contenders"][who][key] = e
    finally:
        for _, s in servers:
            s.stop()
    if "serving" in o.rows and not o.hybrid:
        res["serving"] = serving_pool_vs_per_sequence(o, workdir)
    return res


def fmt(x, unit="", digits=1):
    if x is None:
        return "n/a"
    return f"{x:,.{digits}f}{unit}"


def ratio(a, b):
    return a / b if a and b else None


def runs(xs, digits=1):
    """A cell's runs, as (a, b, c); '' for one run or none."""
    return f" ({', '.join(fmt(x, '', digits) for x in xs)})" if xs and len(xs) > 1 else ""


def prefill_table(o, llmd, server, bench, targets):
    lines = ["| tokens | prefill tok/s llmd | llama-bench | llama-server | llmd / llama-bench (pairs) | "
             "decode tok/s llmd | llama-bench | llama-server | llmd / llama-bench | RSS over file llmd | llama-server |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in o.sizes:
        L, B, S = llmd["sizes"][n], bench["sizes"][n], server["sizes"][n]
        pr, bd = B["prefill_ratio"], B.get("decode_tps")
        dr = ratio(L["decode_tps"], bd) if n in o.depths else None
        lines.append(f"| {n:,} | {fmt(L['prefill_tps'])} | {fmt(B['prefill_tps'])} | {fmt(S['prefill_tps'])} | "
                     f"{fmt(pr, 'x', 2)}{runs(B['pair_ratios'], 2)} | {fmt(L['decode_tps'])}{runs(L.get('decode_runs'))} | "
                     f"{fmt(bd)}{runs(B.get('decode_runs'))} | {fmt(S['decode_tps'])} | {fmt(dr, 'x', 2)} | "
                     f"{fmt(L['rss_over_file_mib'], ' MiB', 0)} | {fmt(S['rss_over_file_mib'], ' MiB', 0)} |")
        targets.append((pr is not None and pr >= 0.97, f"prefill {n}: llmd >= 0.97x llama-bench: {fmt(pr, '', 2)}"))
        if dr is not None:
            targets.append((dr >= 0.97, f"decode at depth {n}: llmd >= 0.97x llama-bench: {fmt(dr, '', 2)}"))
        targets.append((L["rss_over_file_mib"] <= S["rss_over_file_mib"],
                        f"RSS above the file at {n}: llmd <= llama-server: {fmt(L['rss_over_file_mib'], '', 0)} vs "
                        f"{fmt(S['rss_over_file_mib'], '', 0)} MiB"))
    lines += ["", f"Prefill: llmd / llama-bench is the median of the pairs' ratios ({o.prefill_reps} pairs up to "
              f"4,096 tokens, {o.deep_reps} above; llmd first in odd pairs, llama-bench first in even ones); "
              f"the tok/s columns are medians. Decode at depth: medians of {o.decode_reps} runs of {o.tg} tokens "
              "each, llama-bench's right before llmd's request and its repeats. Peak RSS above the file over "
              f"these rows (VmHWM): llmd {fmt(llmd['peak_rss_over_file_mib'], ' MiB', 0)}, "
              f"llama-server {fmt(server['peak_rss_over_file_mib'], ' MiB', 0)}."]
    return lines


def turns_table(o, llmd, server, targets):
    lines = ["| turns | contender | prompt tokens | TTFT cold | TTFT turn 2 (runs) | turn 2 / cold | turn 2 computed |",
             "|---|---|---|---|---|---|---|"]
    for key, label in (("turns", f"{o.turn_prefix}-token prefix"), ("agent", f"agent: {o.agent_tokens}-token system, 20 tools")):
        for who, e in (("llmd", llmd), ("llama-server", server)):
            t = e[key]
            lines.append(f"| {label} | {who} | {t['prompt_tokens']} | {t['cold_ttft'] * 1000:,.0f} ms | "
                         f"{t['second_ttft'] * 1000:,.0f} ms{runs([x * 1000 for x in t['second_ttfts']], 0)} | "
                         f"{t['second_ttft'] / t['cold_ttft']:.3f} | {t['second_computed']:.0f} |")
        lt, st = llmd[key], server[key]
        targets.append((lt["second_ttft"] <= 0.1 * lt["cold_ttft"],
                        f"{label}: turn-2 TTFT <= 0.1x cold: {lt['second_ttft'] / lt['cold_ttft']:.3f}"))
        targets.append((lt["second_ttft"] <= st["second_ttft"],
                        f"{label}: turn-2 TTFT <= llama-server's: {lt['second_ttft'] * 1000:,.0f} vs "
                        f"{st['second_ttft'] * 1000:,.0f} ms"))
    lines += ["", f"Turn 2: the median of {o.turn_reps}, the two servers alternating (both up, each turn 2 "
              "computing the same tokens after its cached turn 1)."]
    return lines


def serving_table(o, sv, targets):
    lines = [f"4-client serving (4 clients x {o.requests} chats of {o.tokens} tokens, HTTP, --reserved-sequences 0):", "",
             "| llmd KV | tok/s (runs) | TTFT p50 | TTFT p95 |", "|---|---|---|---|"]
    for name in ("pool", "per-sequence"):
        rows = sv[name]
        rates = ", ".join(f"{r['tok_s']:.1f}" for r in rows)
        lines.append(f"| {name} | {rates} | "
                     f"{med([r['ttft_p50'] for r in rows]) * 1000:,.0f} ms | {med([r['ttft_p95'] for r in rows]) * 1000:,.0f} ms |")
    pool, per = med([r["tok_s"] for r in sv["pool"]]), med([r["tok_s"] for r in sv["per-sequence"]])
    targets.append((pool >= 0.97 * per, f"4-client serving on the pool >= 0.97x per sequence: {pool / per:.2f} "
                                         f"({pool:.1f} vs {per:.1f} tok/s, medians)"))
    return lines


def report(o, res):
    c = res["contenders"]
    llmd, server = c.get("llmd", {}), c.get("llama-server", {})
    lines = [f"Long contexts (--long): {res['model']}, {o.threads} threads, {PARALLEL} sequences; "
             f"{res['machine']['cpu']}, {res['machine']['cores']} cores; commit {res['machine']['llmd_commit']}; "
             f"{res['time']}; rows: {','.join(o.rows)}"]
    if llmd:
        lines.append(f"Pools: llmd {llmd['pool_tokens']} tokens (--context 0), llama-server {server['pool_tokens']} "
                     f"(-c 0). File {res['file_mib']:.0f} MiB; RSS above it idle: llmd "
                     f"{fmt(llmd['idle_rss_over_file_mib'])}, llama-server {fmt(server['idle_rss_over_file_mib'])} MiB.")
    targets = []
    if "sizes" in llmd:
        lines += [""] + prefill_table(o, llmd, server, c["llama-bench"], targets)
    if "turns" in llmd:
        lines += [""] + turns_table(o, llmd, server, targets)
    if "serving" in res:
        lines += [""] + serving_table(o, res["serving"], targets)
    lines += ["", f"Load average at start: {res['load_start']['loadavg']}, at end: {res['load_end']['loadavg']}", "",
              "Targets (reported, never enforced):", ""]
    lines += [f"- [{'met' if ok else 'NOT met'}] {text}" for ok, text in targets]
    return "\n".join(lines)


FULL_REPS = {"prefill_reps": 3, "deep_reps": 1, "decode_reps": 3, "turn_reps": 4, "serving_reps": 4}
QUICK_REPS = {"prefill_reps": 1, "deep_reps": 1, "decode_reps": 2, "turn_reps": 2, "serving_reps": 2}


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--model", required=True)
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    a.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    a.add_argument("--hybrid", action="store_true", help="the model is hybrid: no serving row (its pool is split)")
    a.add_argument("--rows", default="prefill,turns,serving",
                   help="which rows, comma-separated: prefill, turns, serving (default all; serving only "
                        "on a dense model)")
    a.add_argument("--sizes", dest="size_list", metavar="N,N", help="prefill sizes in tokens, comma-separated (default 128,4096,8192,16384; "
                                   "decode at depth at those above 4,096)")
    # Defaults: QUICK_REPS with --quick, else FULL_REPS.
    a.add_argument("--prefill-reps", type=int,
                   help="llmd/llama-bench prefill pairs at each size up to 4,096 tokens (default 3)")
    a.add_argument("--deep-reps", type=int,
                   help="llmd/llama-bench prefill pairs at each size above 4,096 tokens (default 1: 16k "
                        "tokens take 5-10 minutes a run on 2 threads)")
    a.add_argument("--decode-reps", type=int, help="decode runs at each depth, each side (default 3)")
    a.add_argument("--turn-reps", type=int, help="turn 2s on each server, alternating (default 4)")
    a.add_argument("--serving-reps", type=int, help="4-client serving runs of each KV layout (default 4)")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-results"))
    o = a.parse_args()
    o.rows = [r for r in o.rows.split(",") if r]
    if not o.rows or set(o.rows) - {"prefill", "turns", "serving"}:
        a.error(f"--rows takes prefill, turns and serving, not {','.join(o.rows) or 'nothing'}")
    b = o.build
    o.llmd, o.llama_bench = os.path.join(b, "src", "llmd"), os.path.join(b, "bin", "llama-bench")
    o.llama_server = os.path.join(b, "bin", "llama-server")
    if o.quick:
        o.sizes, o.tg, o.turn_prefix, o.agent_tokens = [128, 512, 1024], 8, 512, 1024
        o.turn_tokens, o.requests, o.tokens = 4, 1, 8
    else:
        o.sizes, o.tg, o.turn_prefix, o.agent_tokens = [128, 4096, 8192, 16384], 32, 8192, 10000
        o.turn_tokens, o.requests, o.tokens = 16, 4, 64
    for name, value in (QUICK_REPS if o.quick else FULL_REPS).items():
        if getattr(o, name) is None:
            setattr(o, name, value)
        if getattr(o, name) < 1:
            a.error(f"--{name.replace('_', '-')} must be 1 or more")
    if o.size_list:
        o.sizes = sorted({int(x) for x in o.size_list.split(",") if x})
    o.depths = [n for n in o.sizes if n > (256 if o.quick else 4096)]
    o.reps = 1  # for machine(): each row's repetitions are the options above
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "work-long")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    res = {"machine": machine(o), "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "load_start": load_average(), "rows": o.rows}
    progress(f"{res['machine']['model']}, {o.threads} threads; logs in {workdir}")
    res.update(run_model(o, workdir))
    res["load_end"] = load_average()
    table = report(o, res)
    stem = "long-hybrid" if o.hybrid else "long"
    write_results(o.out, stem, res, table)
    progress(f"wrote {o.out}/{stem}.json and {stem}.txt")


if __name__ == "__main__":
    main()
