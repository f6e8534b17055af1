#!/usr/bin/env python3
"""On-device footprint: memory that follows use, llmd vs an earlier llmd vs llama-server.

Every contender gets the same model file, threads, 4 slots and 2048 tokens per slot (llmd
--parallel 4 --context 2048, llama-server -np 4 -c 8192) and runs alone, one after another, in
an order that alternates between repetitions (A B C, then C B A), so the shared machine's noise
falls on all alike. For each it measures the resident memory above the model file's size
(VmRSS from /proc/PID/status minus the file, MiB):
  1. idle, 1 s after /health first answers;
  2. after one short chat (about 12 words in, 16 tokens out);
  3. the peak during a 4-client load (VmHWM once 4 concurrent clients have each sent a few
     32-token requests);
  4. after the load, once the model has idled past llmd's --idle-release-after (3 s): until
     llmd's log says working_memory_released (10 s at most); the others get the same wait.
and what the savings cost: single-client decode tok/s (64 tokens), the 4-client load's
aggregate tok/s, and prefill (TTFT of a ~400-token uncached prompt). Medians over repetitions.
Run through scripts/bench --footprint; writes OUT/footprint.json and OUT/footprint.txt (and
OUT/footprint.partial.json, a line per session as it ends, for a run cut short).
"""
import argparse, json, os, shutil, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import ROOT, Contenders, ask, computed_tokens, machine, progress, spread, text_of, write_results

PARALLEL, CONTEXT = 4, 2048        # slots and tokens per slot, the same for every contender
RELEASE_AFTER_S = 3                # llmd --idle-release-after
RELEASE_WAIT_S = 10                # the longest wait for working_memory_released
RELEASED = "working_memory_released"
MEMORY_ROWS = (("idle", "idle after start"), ("chat", "after one short chat"),
               ("peak", "peak during 4-client load"), ("released", "after idle release"))


def load_average():
    """`uptime` as printed, and the three load averages: the machine is shared, and its load
    explains throughput numbers better than anything measured here."""
    text = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return {"uptime": text, "loadavg": list(os.getloadavg()), "time": time.strftime("%H:%M:%S")}


def proc_status(pid):
    """/proc/PID/status memory fields in MiB (VmRSS, VmHWM, RssAnon, RssFile): the split says
    whether the memory is the process's own or the model file's page cache mapped in."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0]) / 1024
    return out


def snapshot(path, workdir, name):
    """A private copy of a binary: the other engineer's rebuild of build/src/llmd must not swap
    the contender between repetitions. Returns (copy, whether it knows --idle-release-after)."""
    copy = os.path.join(workdir, name)
    shutil.copy2(path, copy)
    help_text = subprocess.run([copy, "--help"], capture_output=True, text=True).stdout
    return copy, "--idle-release-after" in help_text


def contenders(o, workdir):
    """(name, start(c, tag), releases) for each contender that is there to run."""
    out = []
    llmd, knows = snapshot(o.llmd, workdir, "llmd")
    if not knows:
        progress(f"note: {o.llmd} has no --idle-release-after: it runs without, nothing is released")
    extra = ["--idle-release-after", f"{RELEASE_AFTER_S}s"] if knows else []
    out.append(("llmd", lambda c, tag: c.start_llmd(tag, llmd, extra), knows))
    if o.baseline_llmd and os.path.exists(o.baseline_llmd):
        # The previous commit's binary knows no --idle-release-after: it gets the plain flags.
        before, _ = snapshot(o.baseline_llmd, workdir, "llmd-before")
        out.append(("llmd-before", lambda c, tag: c.start_llmd(tag, before), False))
    elif o.baseline_llmd:
        progress(f"note: no {o.baseline_llmd}: no llmd-before rows")
    out.append(("llama-server", lambda c, tag: c.start_server(tag), False))
    return out


def over_file(server, file_mib, field="VmRSS"):
    return server.rss_mib(field) - file_mib


def chat(server, c, words, tokens, seed):
    """One greedy streamed HTTP chat with a prompt no earlier request shared."""
    return ask(server, "http", "", f"Request {seed} {time.time()}: " + text_of(words, seed), tokens, c.key)


def load(server, c, clients, requests, tokens, seed):
    """clients threads, each sending requests chats one after another; aggregate tok/s over
    the wall time (every token any client received / seconds from first send to last reply)."""
    rs, errors, lock = [], [], threading.Lock()

    def client(i):
        try:
            for j in range(requests):
                r = chat(server, c, 12, tokens, (seed, i, j))
                with lock:
                    rs.append(r)
        except Exception as e:  # a failed client must fail the measurement, not vanish
            errors.append(e)
    t0 = time.perf_counter()
    th = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    [x.start() for x in th]; [x.join() for x in th]
    if errors:
        raise RuntimeError(f"{server.name}: a load client failed: {errors[0]}")
    return sum(r["tokens"] for r in rs) / (time.perf_counter() - t0)


def count_in_log(server, needle):
    with open(server.log_path, errors="replace") as f:
        return f.read().count(needle)


def wait_for_release(server, releases, released_before):
    """Seconds until llmd logs a new working_memory_released (None: it did not within
    RELEASE_WAIT_S). A contender that releases nothing waits what llmd needs at most, the
    idle time plus a margin, so every RSS here is read after a comparable pause."""
    t0 = time.perf_counter()
    if not releases:
        time.sleep(RELEASE_AFTER_S + 2)
        return None
    while time.perf_counter() - t0 < RELEASE_WAIT_S:
        if count_in_log(server, RELEASED) > released_before:
            time.sleep(0.2)  # the pages go back before the log line; a moment for the counters
            return time.perf_counter() - t0
        time.sleep(0.1)
    return None


def session(o, c, name, start, releases, file_mib, tag, seed):
    """One contender, started fresh, through the four memory readings and the throughput
    measurements. Returns {metric: value}."""
    s = start(c, tag)
    m = {"ready_ms": s.ready_s * 1000}
    try:
        time.sleep(1)
        m["idle"], m["idle_status"] = over_file(s, file_mib), proc_status(s.proc.pid)

        r = chat(s, c, 12, 16, (seed, "chat"))
        m["chat"], m["first_chat_ttft_ms"] = over_file(s, file_mib), r["ttft"] * 1000

        # The load: the peak is VmHWM right after it, before the longer prompts below can raise it.
        m["load_tok_s"] = load(s, c, PARALLEL, o.requests, 32, (seed, "load"))
        m["peak"], m["peak_status"] = over_file(s, file_mib, "VmHWM"), proc_status(s.proc.pid)

        # Warm now: one client decoding 64 tokens, timed from its first token to its last.
        r = chat(s, c, 12, 64, (seed, "decode"))
        m["decode_tokens"] = r["tokens"]
        m["decode_tok_s"] = (r["tokens"] - 1) / (r["wall"] - r["ttft"]) if r["tokens"] > 1 else float("nan")

        # Prefill: a fresh ~400-token prompt (random words, nothing of it cached), one token out.
        r = chat(s, c, o.prefill_words, 1, (seed, "prefill"))
        m["prefill_ttft_ms"], m["prefill_tokens"] = r["ttft"] * 1000, computed_tokens(r)
        m["prefill_tok_s"] = m["prefill_tokens"] / r["ttft"]

        # Idle release: count the log lines first, so a release during an earlier pause (a slow
        # machine) is not mistaken for this one.
        before = count_in_log(s, RELEASED)
        m["release_wait_s"] = wait_for_release(s, releases, before)
        m["released_logged"] = m["release_wait_s"] is not None
        m["released"], m["released_status"] = over_file(s, file_mib), proc_status(s.proc.pid)

        # What the release costs the next request: the first chat after it, as after start.
        r = chat(s, c, 12, 16, (seed, "after-release"))
        m["after_release_ttft_ms"] = r["ttft"] * 1000
        m["releases_logged"] = count_in_log(s, RELEASED)
    finally:
        s.stop()
    return m


def run_model(o, model, workdir, who):
    progress(f"{os.path.basename(model)}: {', '.join(n for n, _, _ in who)}; {o.reps} rep(s)")
    mo = argparse.Namespace(**vars(o)); mo.model = model
    c = Contenders(mo, workdir, parallel=PARALLEL, context=CONTEXT)
    file_mib = os.path.getsize(model) / 2**20
    stem = os.path.splitext(os.path.basename(model))[0]
    per = {n: [] for n, _, _ in who}
    errors = []
    for rep in range(o.reps):
        order = who if rep % 2 == 0 else who[::-1]  # A B C, C B A, ...
        for name, start, releases in order:
            progress(f"  rep {rep + 1}/{o.reps}: {name}")
            run = None
            try:
                run = session(mo, c, name, start, releases, file_mib, f"{name}-{stem}-r{rep}", (stem, rep, name))
                per[name].append(run)
            except (RuntimeError, OSError) as e:  # a contender that fails loses its rows, not the run
                progress(f"  {name} failed: {e}")
                errors.append(f"{name} rep {rep + 1}: {str(e)[-300:]}")
            # Every session so far, in case a long run is cut short.
            with open(os.path.join(o.out, "footprint.partial.json"), "a") as f:
                f.write(json.dumps({"model": stem, "rep": rep, "contender": name, "run": run}) + "\n")
    keys = ("idle", "chat", "peak", "released", "decode_tok_s", "load_tok_s", "prefill_ttft_ms", "prefill_tok_s",
            "prefill_tokens", "first_chat_ttft_ms", "after_release_ttft_ms", "ready_ms")
    summary = {n: {k: spread([m[k] for m in ms if m.get(k) is not None]) for k in keys} for n, ms in per.items() if ms}
    return {"model": os.path.basename(model), "model_file_mib": file_mib, "hybrid": "qwen35" in stem,
            "contenders": summary, "runs": per, "errors": errors,
            "releases": {n: [m["released_logged"] for m in ms] for n, ms in per.items()}}


# ---------------------------------------------------------------- report

def ratio(a, b):
    return a / b if b and b == b and b > 0 else float("nan")


def model_table(o, res, targets):
    C = res["contenders"]
    names = [n for n in ("llmd", "llmd-before", "llama-server") if n in C]
    cell = lambda s: (f"{s['median']:.1f}" if s["n"] <= 1 else f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})") \
        if s["n"] else "n/a"
    get = lambda n, k: C[n][k]["median"] if n in C and C[n][k]["n"] else float("nan")
    hdr = f"{'':<38}" + "".join(f"{n:>26}" for n in names) + f"{'llmd/server':>12}{'llmd/before':>12}"
    kind = " (hybrid)" if res["hybrid"] else ""
    lines = [f"{res['model']}{kind}: file {res['model_file_mib']:.1f} MiB, {PARALLEL} slots x {CONTEXT} tokens, "
             f"{o.threads} thread{'s' if o.threads != 1 else ''}, {o.reps} rep(s)", "",
             "RSS above the model file (MiB, median (min-max))", hdr]

    def row(label, key, fmt="{:.2f}"):
        r_s, r_b = ratio(get("llmd", key), get("llama-server", key)), ratio(get("llmd", key), get("llmd-before", key))
        lines.append(f"{label:<38}" + "".join(f"{cell(C[n][key]):>26}" for n in names)
                     + f"{fmt.format(r_s):>12}" + (f"{fmt.format(r_b):>12}" if "llmd-before" in C else f"{'':>12}"))
        return r_s, r_b

    rel = {}
    for key, label in MEMORY_ROWS:
        rel[key] = row(label + (f" ({RELEASE_AFTER_S} s)" if key == "released" else ""), key)
    lines += ["", "What it costs", hdr]
    tput = {k: row(label, k) for k, label in (
        ("decode_tok_s", "decode, 1 client, 64 tokens (tok/s)"),
        ("load_tok_s", "4-client aggregate, 32 tokens (tok/s)"),
        ("prefill_ttft_ms", f"prefill TTFT, ~{get('llmd', 'prefill_tokens'):.0f}-token prompt (ms)"),
        ("prefill_tok_s", "prefill (tok/s)"),
        ("first_chat_ttft_ms", "first chat TTFT after start (ms)"),
        ("after_release_ttft_ms", "first chat TTFT after release (ms)"))}
    logged = res["releases"].get("llmd", [])
    lines.append(f"llmd logged {RELEASED} in {sum(logged)} of {len(logged)} repetition(s)")
    for e in res["errors"]:
        lines.append(f"failed: {e}")

    # Targets: ratios of medians, as the suite reports them.
    m = res["model"]
    mem = lambda key: (f"{get('llmd', key):.0f} vs {get('llama-server', key):.0f} MiB")
    for key, limit in (("idle", 0.3), ("peak", 0.7), ("released", 0.1)):
        r = rel[key][0]
        targets.append((m, f"{dict(MEMORY_ROWS)[key]}: llmd <= {limit}x llama-server (RSS above file)", r,
                        r <= limit, mem(key)))
    for key, label in (("decode_tok_s", "decode tok/s"), ("load_tok_s", "4-client tok/s")):
        r = tput[key][1]
        targets.append((m, f"{label} within 3 % of llmd-before (>= 0.97x)", r, r >= 0.97,
                        f"{get('llmd', key):.1f} vs {get('llmd-before', key):.1f} tok/s"))
    return lines


def report(o, results):
    targets = []
    lines = [f"llmd footprint: memory that follows use; {results['machine']['cpu']}, {os.cpu_count()} cores "
             f"(shared), commit {results['machine']['llmd_commit']}", ""]
    for res in results["models"]:
        lines += model_table(o, res, targets) + [""]
    a, z = results["load_start"], results["load_end"]
    lines += [f"Load average at start {a['time']}: " + " ".join(f"{x:.2f}" for x in a["loadavg"])
              + f"; at end {z['time']}: " + " ".join(f"{x:.2f}" for x in z["loadavg"]), "",
              "Targets (reported, never enforced)"]
    for m, label, r, ok, nums in targets:
        lines.append(f"  [{'met' if ok else 'NOT met'}] {m}: {label}: {r:.3f} ({nums})")
    results["targets"] = [{"model": m, "target": t, "ratio": r, "met": ok, "numbers": n} for m, t, r, ok, n in targets]
    return "\n".join(lines)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--model", action="append", help="GGUF file (repeatable; default: the 0.6B and the hybrid 0.8B "
                                                    "test models, --quick: the tiny one)")
    a.add_argument("--baseline-llmd", help="an earlier llmd binary, for the llmd-before rows (skipped if absent)")
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    a.add_argument("--reps", type=int, default=2)
    a.add_argument("--requests", type=int, default=3, help="requests per client in the 4-client load")
    a.add_argument("--quick", action="store_true", help="the tiny model, one repetition: a smoke test")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-results"))
    o = a.parse_args()
    b = o.build
    o.llmd, o.llama_server = os.path.join(b, "src", "llmd"), os.path.join(b, "bin", "llama-server")
    models = os.path.join(b, "testmodels")
    if o.quick:
        o.reps, o.requests = 1, 2
    o.model = o.model or ([os.path.join(models, "tiny-q8_0.gguf")] if o.quick else
                          [os.path.join(models, "qwen3-0.6b-q4_0.gguf"), os.path.join(models, "qwen35-0.8b-q4_0.gguf")])
    o.prefill_words = 390  # with the chat template about 400 tokens (the table prints the count)
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "footprint-work")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    if os.path.exists(os.path.join(o.out, "footprint.partial.json")):
        os.remove(os.path.join(o.out, "footprint.partial.json"))

    results = {"load_start": load_average()}
    mo = argparse.Namespace(**vars(o)); mo.model = o.model[0]
    results["machine"] = machine(mo)
    progress(f"load average {results['load_start']['loadavg']}; logs in {workdir}")
    who = contenders(o, workdir)
    results["contenders"] = {"llmd": o.llmd, "llmd-before": o.baseline_llmd if any(n == "llmd-before" for n, _, _ in who)
                             else None, "llama-server": o.llama_server,
                             "llmd_idle_release_after": f"{RELEASE_AFTER_S}s" if who[0][2] else None}
    results["settings"] = {"parallel": PARALLEL, "context_per_slot": CONTEXT, "threads": o.threads, "reps": o.reps,
                           "load_requests_per_client": o.requests, "prefill_words": o.prefill_words}
    results["models"] = [run_model(o, m, workdir, who) for m in o.model]
    results["load_end"] = load_average()
    table = report(o, results)
    write_results(o.out, "footprint", results, table)
    progress(f"wrote {o.out}/footprint.json, footprint.txt")


if __name__ == "__main__":
    main()
