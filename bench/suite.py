#!/usr/bin/env python3
"""llmd side by side with llama-bench, llama-server and the memory-bandwidth limit.

Run through scripts/bench, which builds everything first. Every scenario uses the same model
file and thread count for every contender, interleaves them rep by rep (A/B/C, rotating) so
machine noise hits all alike, and reports medians with min-max and the ratio to the peer.
Progress goes to stderr; the table to stdout; JSON and a PNG chart to --out.
With --hybrid (a Qwen3.5-shaped model) the report names the model hybrid; every scenario, the
burst of new conversations and the checkpoint counters run for dense and hybrid models alike.
"""
import argparse, json, math, os, platform, random, shutil, signal, socket, statistics, struct, subprocess, sys, time
import http.client, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load import pstr, read_frame, uvarint, varint  # the native protocol's encoding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The burst's four new conversations: one system prompt, a different short question each.
QUESTIONS = ("What is the first word?", "Which word comes most often?", "How many words name water?",
             "Summarise it in one line.")
WORDS = ("river stone light cloud garden window morning letter music paper forest silver "
         "engine bridge summer winter market ocean valley candle").split()


def progress(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(xs, q):
    """The nearest-rank percentile: the smallest value with at least q of the values at or below
    it (p95 of 20 is the 19th, not the largest)."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(q * len(xs)) - 1)] if xs else float("nan")


def spread(xs):
    return {"median": med(xs), "min": min(xs) if xs else None, "max": max(xs) if xs else None, "n": len(xs)}


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    return port


class Server:
    """A daemon process (llmd or llama-server) with its log in the work directory."""

    def __init__(self, name, args, workdir):
        self.name, self.log_path = name, os.path.join(workdir, name + ".log")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(args, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)

    def rss_mib(self, field="VmRSS"):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def wait_healthy(self, port, limit=300):
        """Seconds from process start until GET /health answers 200."""
        end = time.time() + limit
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: " + open(self.log_path).read()[-2000:])
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/health"); r = c.getresponse(); r.read(); c.close()
                if r.status == 200:
                    return time.perf_counter() - self.started
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError(f"{self.name} not healthy after {limit} s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill(); self.proc.wait()


class Contenders:
    """Starts llmd and llama-server on the same model, threads, slots and context."""

    def __init__(self, o, workdir, parallel, context):
        self.o, self.workdir, self.parallel, self.context = o, workdir, parallel, context
        self.key = "bench-key-" + "%016x" % random.getrandbits(64)
        with open(os.path.join(workdir, "key"), "w") as f:
            f.write(self.key + "\n")
        os.chmod(os.path.join(workdir, "key"), 0o600)

    def start_llmd(self, tag="llmd", binary=None, extra=()):
        """binary: another llmd build than o.llmd (bench/footprint.py's llmd-before); extra: more
        flags, which that binary must know."""
        port = free_port()
        sock = os.path.join(self.workdir, tag + ".sock")
        s = Server(tag, [binary or self.o.llmd, "--model", self.o.model, "--threads", str(self.o.threads),
                         "--parallel", str(self.parallel), "--context", str(self.context),
                         "--max-new-tokens", "4096", "--rate-limit", "1000000", "--socket", sock,
                         "--http-socket", "off", "--http-listen", f"127.0.0.1:{port}",
                         "--api-key-file", os.path.join(self.workdir, "key"), *extra], self.workdir)
        s.port, s.native = port, sock
        s.ready_s = s.wait_healthy(port)
        return s

    def start_server(self, tag="llama-server"):
        port = free_port()
        s = Server(tag, [self.o.llama_server, "-m", self.o.model, "-t", str(self.o.threads),
                         "-np", str(self.parallel), "-c", str(self.context * self.parallel),
                         "--host", "127.0.0.1", "--port", str(port), "--no-webui", "--metrics"], self.workdir)
        s.port, s.native = port, None
        s.ready_s = s.wait_healthy(port)
        return s


def native_request(path, user, max_tokens, system=""):
    """One greedy GenerateStream on llmd's native socket: client-side TTFT and inter-token
    gaps, and the daemon's own stats from the Done frame."""
    params = b"\x01" + pstr(system) + b"\x01" + struct.pack("<f", 0.0) + b"\x00" * 7
    body = b"\x03" + pstr(user) + b"\x01" + varint(max_tokens) + params
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    t0 = time.perf_counter(); s.sendall(struct.pack(">I", len(body)) + body)
    stamps = []
    while True:
        f = read_frame(s)
        if f[0] == 3:
            stamps.append(time.perf_counter())
        elif f[0] == 4:
            gen, i = uvarint(f, 1); prompt, i = uvarint(f, i); cached, i = uvarint(f, i)
            prefill_ms, ttft_ms, decode_ms = struct.unpack_from("<fff", f, i)
            s.close()
            end = time.perf_counter()
            return {"ttft": (stamps[0] if stamps else end) - t0, "itl": [b - a for a, b in zip(stamps, stamps[1:])],
                    "tokens": gen, "wall": end - t0, "prompt_tokens": prompt, "cached": cached,
                    "prefill_ms": prefill_ms, "decode_ms": decode_ms}
        elif f[0] == 1:
            raise RuntimeError("llmd error: " + f[2:].decode(errors="replace"))


def http_request(port, key, messages, max_tokens, extra=None):
    """One greedy streamed chat completion over OpenAI HTTP (llmd or llama-server); `extra`:
    more request fields. The result keeps the final usage and timings objects too."""
    body = json.dumps({"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True},
                       "chat_template_kwargs": {"enable_thinking": False}, **(extra or {})})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", body,
              {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:300]!r}")
    stamps, usage, timings = [], None, None
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            break
        ev = json.loads(data)
        if ev.get("usage"):
            usage = ev["usage"]
        if ev.get("timings"):  # llama-server's own: cache_n reused, prompt_n computed
            timings = ev["timings"]
        for ch in ev.get("choices", []):
            delta = ch.get("delta", {})  # TTFT: the first delta of any kind
            if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
                stamps.append(time.perf_counter())
    end = time.perf_counter(); c.close()
    tokens = usage["completion_tokens"] if usage else len(stamps)
    cached = ((usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens")
    out = {"ttft": (stamps[0] if stamps else end) - t0, "itl": [b - a for a, b in zip(stamps, stamps[1:])],
           "tokens": tokens, "wall": end - t0, "cached": cached, "prompt_tokens": (usage or {}).get("prompt_tokens"),
           "usage": usage, "timings": timings}
    if timings and "prompt_n" in timings:
        out["cached"], out["computed"] = timings.get("cache_n", 0), timings["prompt_n"]
    return out


def computed_tokens(r):
    """Prompt tokens a request actually computed: llama-server's timings.prompt_n, else
    prompt_tokens - cached_tokens as llmd reports them."""
    if r.get("computed") is not None:
        return r["computed"]
    return (r.get("prompt_tokens") or 0) - (r.get("cached") or 0)


def scrape(port, key):
    """A Prometheus /metrics page as {family: value summed over labels}; {} if unavailable."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + key})
        r = c.getresponse(); body = r.read().decode(errors="replace"); c.close()
    except OSError:
        return {}
    if r.status != 200:
        return {}
    m = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            m[name.split("{", 1)[0]] = m.get(name.split("{", 1)[0], 0.0) + float(value)
        except ValueError:
            pass
    return m


def post_json(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse(); data = r.read(); c.close()
    if r.status != 200:
        raise RuntimeError(f"{path}: HTTP {r.status}: {data[:300]!r}")
    return json.loads(data)


def prompt_token_lists(server, system, questions):
    """The chat prompts' tokens as llama-server builds them (its /apply-template and /tokenize,
    the model's own template and vocabulary), thinking off like every request here."""
    out = []
    for q in questions:
        prompt = post_json(server.port, "/apply-template", {
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": q}],
            "chat_template_kwargs": {"enable_thinking": False}})["prompt"]
        out.append(post_json(server.port, "/tokenize", {"content": prompt, "add_special": True})["tokens"])
    return out


def ask(target, kind, system, user, max_tokens, key):
    if kind == "native":
        return native_request(target.native, user, max_tokens, system)
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return http_request(target.port, key, msgs, max_tokens)


def text_of(n, seed):
    rng = random.Random(str(seed))
    return " ".join(rng.choice(WORDS) for _ in range(n))


# ---------------------------------------------------------------- scenarios

def engine_limit(o, workdir, results):
    """pp128, pp512, tg128: llmd through its native socket vs llama-bench, same build."""
    progress("engine limit: llmd (native, streaming) vs llama-bench")
    c = Contenders(o, workdir, parallel=1, context=max(1024, o.pp_long + 64))
    llmd = c.start_llmd("llmd-engine")
    try:
        base = native_request(llmd.native, "river", 1)["prompt_tokens"] - 1  # template tokens
        out = {k: {"llmd": [], "llama-bench": []} for k in ("pp_short", "pp_long", "tg")}
        depth = []
        for rep in range(o.reps):
            progress(f"  rep {rep + 1}/{o.reps}")
            for key, n in (("pp_short", o.pp_short), ("pp_long", o.pp_long)):
                # A fresh random text each time, so nothing comes from the cache.
                r = native_request(llmd.native, text_of(n - base, (rep, n, time.time())), 1)
                out[key]["llmd"].append((r["prompt_tokens"] - r["cached"]) / (r["prefill_ms"] / 1000))
            r = native_request(llmd.native, f"Story {rep} {time.time()}: tell me about the sea", o.tg)
            if r["tokens"] > 1:
                out["tg"]["llmd"].append((r["tokens"] - 1) / (r["decode_ms"] / 1000))
            # llama-bench decodes at the same depth: after as many tokens as llmd's prompt had
            # (attention grows with it; at depth 0 llama-bench would be ~4 % faster).
            depth.append(r["prompt_tokens"])
            for args in (["-p", f"{o.pp_short},{o.pp_long}", "-n", "0"], ["-p", "0", "-n", str(o.tg), "-d", str(r["prompt_tokens"])]):
                lb = subprocess.run([o.llama_bench, "-m", o.model, "-t", str(o.threads), "-r", "1", "-o", "json", *args],
                                    capture_output=True, text=True, check=True)
                for t in json.loads(lb.stdout):
                    key = "tg" if t["n_gen"] > 0 else ("pp_short" if t["n_prompt"] == o.pp_short else "pp_long")
                    out[key]["llama-bench"].append(t["avg_ts"])
        results["tg_depth_tokens"] = med(depth)
        results["engine"] = {k: {who: spread(v) for who, v in d.items()} for k, d in out.items()}
    finally:
        llmd.stop()


def clients_round(t, kind, key, clients, requests, tokens, rep):
    """`clients` clients at once, each sending `requests` chat requests of `tokens` tokens one
    after the other: (aggregate tok/s over the wall time, the replies)."""
    rs, lock = [], threading.Lock()

    def client(i):
        for j in range(requests):
            r = ask(t, kind, "", f"Client {i} request {j} rep {rep}: {text_of(12, (i, j, rep))}", tokens, key)
            with lock:
                rs.append(r)
    t0 = time.perf_counter()
    th = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    [x.start() for x in th]; [x.join() for x in th]
    return sum(r["tokens"] for r in rs) / (time.perf_counter() - t0), rs


def serving(o, workdir, results):
    """1 and 4 concurrent clients, and a repeated long system prompt, on llmd (native and HTTP)
    and llama-server, all with 4 slots; then startup time and memory."""
    progress("serving: llmd native, llmd HTTP, llama-server; 4 slots each")
    c = Contenders(o, workdir, parallel=4, context=o.context)
    llmd = c.start_llmd()
    server = c.start_server()
    file_mib = os.path.getsize(o.model) / 2**20
    targets = [("llmd-native", llmd, "native"), ("llmd-http", llmd, "http"), ("llama-server", server, "http")]
    try:
        time.sleep(1)
        results["memory"] = {"model_file_mib": file_mib,
                             "idle_rss_mib": {"llmd": llmd.rss_mib(), "llama-server": server.rss_mib()}}
        # Warm each with one burst of as many requests as the biggest load: the first big batch
        # after startup pays page faults for fresh compute memory (llmd's first 4-request burst
        # has measured ~575 ms TTFT against ~370 ms later). Steady state is what is compared.
        for name, t, kind in targets:
            burst = [threading.Thread(target=ask, args=(t, kind, "", f"Warm-up {i}: " + text_of(12, i), 4, c.key))
                     for i in range(max(o.clients))]
            [x.start() for x in burst]; [x.join() for x in burst]
        load = {}
        for clients in o.clients:
            for rep in range(o.reps):
                order = targets[rep % 3:] + targets[:rep % 3]
                for name, t, kind in order:
                    progress(f"  {clients} client(s), rep {rep + 1}/{o.reps}: {name}")
                    tok_s, rs = clients_round(t, kind, c.key, clients, o.requests, o.tokens, rep)
                    d = load.setdefault(name, {}).setdefault(clients, {"tok_s": [], "ttft": [], "itl": []})
                    d["tok_s"].append(tok_s)
                    d["ttft"] += [r["ttft"] for r in rs]
                    d["itl"] += [x for r in rs for x in r["itl"]]
        results["load"] = {name: {str(n): {"tok_s": spread(d["tok_s"]), "ttft_p50_ms": pct(d["ttft"], 0.5) * 1000,
                                           "ttft_p95_ms": pct(d["ttft"], 0.95) * 1000,
                                           "itl_p50_ms": pct(d["itl"], 0.5) * 1000} for n, d in per.items()}
                           for name, per in load.items()}
        results["memory"]["peak_rss_mib"] = {"llmd": llmd.rss_mib("VmHWM"), "llama-server": server.rss_mib("VmHWM")}

        prefix = {}
        for rep in range(o.reps):
            for name, t, kind in targets:
                progress(f"  repeated {o.system_tokens}-word system prompt, rep {rep + 1}/{o.reps}: {name}")
                system = f"Session {name} {rep} {time.time()}. " + text_of(o.system_tokens, (name, rep))
                cold = ask(t, kind, system, "What is the first word?", 4, c.key)
                warm = ask(t, kind, system, "And the last one?", 4, c.key)
                d = prefix.setdefault(name, {"cold": [], "cached": [], "reused": [], "prompt": []})
                d["cold"].append(cold["ttft"] * 1000); d["cached"].append(warm["ttft"] * 1000)
                d["reused"].append(warm.get("cached") or 0)
                d["prompt"].append((warm.get("cached") or 0) + computed_tokens(warm))
        results["prefix"] = {n: {"cold_ms": spread(d["cold"]), "cached_ms": spread(d["cached"]),
                                 "ratio": med(d["cached"]) / med(d["cold"]),
                                 "reused_tokens": med(d["reused"]), "prompt_tokens": med(d["prompt"])}
                             for n, d in prefix.items()}

        new_conversation_burst(o, c, targets, llmd, server, results)

        # What the run left behind: llmd's recurrent-state checkpoints and both servers' memory.
        m = scrape(llmd.port, c.key)
        results["checkpoints"] = {k: m.get("llmd_" + k) for k in (
            "checkpoints", "checkpoint_bytes", "checkpoint_hits_total", "checkpoint_misses_total",
            "prefix_copies_total", "decode_steps_total", "prompt_tokens_total", "cached_prompt_tokens_total")}
        results["memory"]["final_rss_mib"] = {"llmd": llmd.rss_mib(), "llama-server": server.rss_mib()}
        results["memory"]["final_peak_rss_mib"] = {"llmd": llmd.rss_mib("VmHWM"), "llama-server": server.rss_mib("VmHWM")}
    finally:
        llmd.stop(); server.stop()

    progress("startup: process start to /health 200")
    ready = {"llmd": [], "llama-server": []}
    for rep in range(o.reps):
        for who in (("llmd", "llama-server") if rep % 2 == 0 else ("llama-server", "llmd")):
            s = c.start_llmd(f"llmd-start{rep}") if who == "llmd" else c.start_server(f"server-start{rep}")
            ready[who].append(s.ready_s * 1000)
            s.stop()
    results["startup_ms"] = {k: spread(v) for k, v in ready.items()}


def new_conversation_burst(o, c, targets, llmd, server, results):
    """4 new conversations at once: each with the same system prompt, new to the server (fresh
    per contender and rep), and its own short question, sent together by 4 clients. Client-side
    TTFT, and the prompt tokens each server actually computed for the burst: llmd's /metrics
    (llmd_prompt_tokens_total - llmd_cached_prompt_tokens_total, before and after), llama-server's
    timings (prompt_n) and its /metrics prompt counter. The ideal is the shared prefix once plus
    each conversation's own tail, from llama-server's tokenization of the same chats."""
    n = max(o.clients)
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(n)]
    llmd_computed = lambda m: m.get("llmd_prompt_tokens_total", 0) - m.get("llmd_cached_prompt_tokens_total", 0)
    out = {}
    # Rep -1 is an untimed warm-up of the same shape: the first batch of several long prompts
    # after startup pays page faults and buffer growth that the steady state does not.
    for rep in range(-1, o.reps):
        order = targets[rep % 3:] + targets[:rep % 3]
        for name, t, kind in order:
            progress(f"  burst of {n} new conversations, one {o.system_tokens}-word system prompt, "
                     + (f"rep {rep + 1}/{o.reps}" if rep >= 0 else "warm-up") + f": {name}")
            # Random words from the first one on: only the template's opening tokens can match
            # anything an earlier conversation left in a cache.
            system = text_of(o.system_tokens, ("burst", name, rep, time.time())) + f". (Burst {name} {rep}.)"
            try:
                toks = prompt_token_lists(server, system, questions)
                shared = 0
                while all(len(x) > shared for x in toks) and len({x[shared] for x in toks}) == 1:
                    shared += 1
                ideal, unshared = shared + sum(len(x) - shared for x in toks), sum(len(x) for x in toks)
            except (OSError, RuntimeError, KeyError, ValueError) as e:
                progress(f"  (no tokenization from llama-server: {e})")
                shared = ideal = unshared = None
            metrics_port = llmd.port if t is llmd else server.port
            before = scrape(metrics_port, c.key)
            rs, go = [None] * n, threading.Barrier(n)

            def client(i):
                go.wait()
                rs[i] = ask(t, kind, system, questions[i], 4, c.key)
            th = [threading.Thread(target=client, args=(i,)) for i in range(n)]
            [x.start() for x in th]; [x.join() for x in th]
            if any(r is None for r in rs):
                raise RuntimeError(f"burst on {name}: a client failed (see {t.log_path})")
            from_responses = sum(computed_tokens(r) for r in rs)
            # Counters move when a request finishes, which may trail its last frame a little.
            end = time.time() + 2
            while True:
                after = scrape(metrics_port, c.key)
                if t is llmd:
                    from_metrics = llmd_computed(after) - llmd_computed(before)
                    done = after.get("llmd_prompt_tokens_total", 0) - before.get("llmd_prompt_tokens_total", 0) >= \
                        sum(r.get("prompt_tokens") or 0 for r in rs)
                else:
                    key = "llamacpp:prompt_tokens_total"
                    from_metrics = after[key] - before[key] if key in after and key in before else None
                    done = from_metrics is None or from_metrics >= from_responses
                if done or time.time() > end:
                    break
                time.sleep(0.02)
            if rep < 0:
                continue
            d = out.setdefault(name, {"ttft": [], "computed": [], "from_responses": [], "from_metrics": [],
                                      "ideal": [], "unshared": [], "shared": [], "prompt_tokens": [], "deltas": []})
            d["ttft"] += [r["ttft"] * 1000 for r in rs]
            d["from_responses"].append(from_responses)
            d["from_metrics"].append(from_metrics)
            d["computed"].append(from_metrics if t is llmd and from_metrics is not None else from_responses)
            d["ideal"].append(ideal); d["unshared"].append(unshared); d["shared"].append(shared)
            d["prompt_tokens"].append([r.get("prompt_tokens") for r in rs])
            if t is llmd:
                d["deltas"].append({k: after.get("llmd_" + k, 0) - before.get("llmd_" + k, 0) for k in (
                    "checkpoint_hits_total", "checkpoint_misses_total", "prefix_copies_total")})
    num = lambda xs: [x for x in xs if x is not None]
    results["burst"] = {name: {"ttft_p50_ms": pct(d["ttft"], 0.5), "ttft_p95_ms": pct(d["ttft"], 0.95),
                               "computed": med(d["computed"]), "ideal": med(num(d["ideal"])),
                               "unshared": med(num(d["unshared"])), "shared_prefix": med(num(d["shared"])),
                               "per_rep": {k: v for k, v in d.items() if k != "ttft"}, "ttft_ms": d["ttft"]}
                        for name, d in out.items()}


def bandwidth(o, results):
    progress("memory bandwidth probe")
    r = subprocess.run([o.bandwidth_probe, "--threads", str(o.threads), "--mib", "256" if o.quick else "1024"],
                       capture_output=True, text=True, check=True)
    bw = json.loads(r.stdout)["read_gb_per_s"]
    per_token = os.path.getsize(o.model)  # every weight is read once per decoded token (upper bound)
    limit = bw * 1e9 / per_token
    eng = results["engine"]["tg"]
    results["bandwidth"] = {"read_gb_per_s": bw, "bytes_per_token": per_token, "limit_tok_s": limit,
                            "llmd_fraction": eng["llmd"]["median"] / limit,
                            "llama_bench_fraction": eng["llama-bench"]["median"] / limit}


# ---------------------------------------------------------------- report

def machine(o):
    def read(path):
        try:
            return open(path).read().strip()
        except OSError:
            return None
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    git = lambda *a: subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True).stdout.strip()
    llama_dir = os.environ.get("LLMD_LLAMA_SOURCE_DIR", os.path.join(ROOT, "third_party", "llama.cpp"))
    return {"cpu": cpu, "cores": os.cpu_count(), "threads_used": o.threads,
            "governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "max_freq_khz": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq"),
            "kernel": platform.release(), "llmd_commit": git("rev-parse", "--short", "HEAD") + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else ""),
            "llama_cpp": subprocess.run(["git", "-C", llama_dir, "describe", "--tags", "--always"], capture_output=True, text=True).stdout.strip(),
            "model": os.path.basename(o.model), "model_mib": round(os.path.getsize(o.model) / 2**20, 1),
            "reps": o.reps, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def report(o, results):
    e, L, p, m, b = results["engine"], results["load"], results["prefix"], results["memory"], results["bandwidth"]
    f = lambda s: f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"
    kind = " (hybrid)" if o.hybrid else ""
    lines = [f"llmd benchmark: {results['machine']['model']}{kind}, {o.threads} threads, {o.reps} rep(s), "
             f"{results['machine']['cpu']}", "", "Engine limit (tok/s, median (min-max))",
             f"{'test':<10} {'llmd':>24} {'llama-bench':>24} {'ratio':>6}"]
    targets = []  # (label, ratio, met, the numbers behind the ratio)
    depth = int(results["tg_depth_tokens"])
    for key, label in (("pp_short", f"pp{o.pp_short}"), ("pp_long", f"pp{o.pp_long}"), ("tg", f"tg{o.tg}@d{depth}")):
        a, z = e[key]["llmd"]["median"], e[key]["llama-bench"]["median"]
        r = a / z
        lines.append(f"{label:<10} {f(e[key]['llmd']):>24} {f(e[key]['llama-bench']):>24} {r:>6.2f}")
        targets.append((f"{label} through the daemon >= 0.97x llama-bench", r, r >= 0.97,
                        f"{a:.1f} vs {z:.1f} tok/s"))
    lines += ["", f"Serving ({o.tokens} tokens per request, {o.requests} requests per client)",
              f"{'clients':<8} {'contender':<13} {'tok/s':>22} {'TTFT p50':>9} {'TTFT p95':>9} {'ITL p50':>8}"]
    for n in map(str, o.clients):
        for name in ("llmd-native", "llmd-http", "llama-server"):
            d = L[name][n]
            lines.append(f"{n:<8} {name:<13} {f(d['tok_s']):>22} {d['ttft_p50_ms']:>7.0f}ms {d['ttft_p95_ms']:>7.0f}ms "
                         f"{d['itl_p50_ms']:>6.1f}ms")
    top = str(max(o.clients))
    for name in ("llmd-native", "llmd-http"):
        a, z = L[name][top]["tok_s"]["median"], L["llama-server"][top]["tok_s"]["median"]
        targets.append((f"{top} clients, {name} aggregate tok/s >= llama-server", a / z, a >= z,
                        f"{a:.1f} vs {z:.1f} tok/s"))
        a, z = L[name][top]["ttft_p95_ms"], L["llama-server"][top]["ttft_p95_ms"]
        targets.append((f"{top} clients, {name} p95 TTFT <= llama-server (ratio)", a / z, a <= z,
                        f"{a:.0f} vs {z:.0f} ms"))
    lines += ["", f"Repeated {o.system_tokens}-word system prompt (TTFT ms; reused: prompt tokens the cached "
                  "request took from the cache)",
              f"{'contender':<13} {'cold':>22} {'cached':>22} {'ratio':>6} {'reused':>10}"]
    for name in ("llmd-native", "llmd-http", "llama-server"):
        reused = f"{p[name]['reused_tokens']:.0f}/{p[name]['prompt_tokens']:.0f}"
        lines.append(f"{name:<13} {f(p[name]['cold_ms']):>22} {f(p[name]['cached_ms']):>22} {p[name]['ratio']:>6.3f} "
                     f"{reused:>10}")
    for name in ("llmd-native", "llmd-http"):
        r, z = p[name]["ratio"], p["llama-server"]["ratio"]
        nums = f"{p[name]['cached_ms']['median']:.1f} vs {p[name]['cold_ms']['median']:.1f} ms"
        targets.append((f"{name} cached TTFT <= 0.1x cold", r, r <= 0.1, nums))
        targets.append((f"{name} cached/cold ratio <= llama-server's ({z:.3f})", r, r <= z,
                        f"llama-server {p['llama-server']['cached_ms']['median']:.1f} vs "
                        f"{p['llama-server']['cold_ms']['median']:.1f} ms"))
    B = results["burst"]
    n = max(o.clients)
    lines += ["", f"Burst: {n} new conversations at once, one new {o.system_tokens}-word system prompt, "
                  "a different question each (TTFT ms; prompt tokens computed for the whole burst)",
              f"{'contender':<13} {'TTFT p50':>9} {'TTFT p95':>9} {'computed':>9} {'ideal':>6} {'unshared':>9} "
              f"{'vs ideal':>8}"]
    for name in ("llmd-native", "llmd-http", "llama-server"):
        d = B[name]
        vs = d["computed"] / d["ideal"] if d["ideal"] == d["ideal"] and d["ideal"] else float("nan")
        lines.append(f"{name:<13} {d['ttft_p50_ms']:>7.0f}ms {d['ttft_p95_ms']:>7.0f}ms {d['computed']:>9.0f} "
                     f"{d['ideal']:>6.0f} {d['unshared']:>9.0f} {vs:>8.2f}")
    sv = B["llama-server"]
    for name in ("llmd-native", "llmd-http"):
        d = B[name]
        lines.append(f"{name + '/llama-server':<26} TTFT p50 {d['ttft_p50_ms'] / sv['ttft_p50_ms']:.2f}, "
                     f"p95 {d['ttft_p95_ms'] / sv['ttft_p95_ms']:.2f}, "
                     f"prompt tokens computed {d['computed'] / sv['computed']:.2f}")
    lines.append(f"(ideal: the shared prefix of {B['llama-server']['shared_prefix']:.0f} tokens once plus each "
                 "conversation's own tail; unshared: every prompt in full)")
    for name in ("llmd-native", "llmd-http"):
        pr = B[name]["per_rep"]
        if any(a is not None and a != b for a, b in zip(pr["from_metrics"], pr["from_responses"])):
            lines.append(f"note: {name}: /metrics says {pr['from_metrics']} computed, the responses "
                         f"{pr['from_responses']}")
    for name in ("llmd-native", "llmd-http"):
        d = B[name]
        r = d["computed"] / d["ideal"] if d["ideal"] == d["ideal"] and d["ideal"] else float("nan")
        targets.append((f"burst, {name} computes the shared prefix once (computed <= 1.1x ideal)", r, r <= 1.1,
                        f"{d['computed']:.0f} computed, ideal {d['ideal']:.0f}, unshared {d['unshared']:.0f}"))
        r = d["ttft_p95_ms"] / sv["ttft_p95_ms"]
        targets.append((f"burst, {name} p95 TTFT <= 0.6x llama-server", r, r <= 0.6,
                        f"{d['ttft_p95_ms']:.0f} vs {sv['ttft_p95_ms']:.0f} ms"))
    s = results["startup_ms"]
    over = lambda v: v - m["model_file_mib"]
    lines += ["", "Startup and memory", f"{'':<28} {'llmd':>14} {'llama-server':>14} {'ratio':>6}"]
    r = s["llmd"]["median"] / s["llama-server"]["median"]
    lines.append(f"{'start to ready (ms)':<28} {s['llmd']['median']:>14.0f} {s['llama-server']['median']:>14.0f} {r:>6.2f}")
    targets.append(("ready time <= llama-server", r, r <= 1.0,
                    f"{s['llmd']['median']:.0f} vs {s['llama-server']['median']:.0f} ms"))
    ri = over(m["idle_rss_mib"]["llmd"]) / over(m["idle_rss_mib"]["llama-server"])
    lines.append(f"{'idle RSS over file (MiB)':<28} {over(m['idle_rss_mib']['llmd']):>14.0f} "
                 f"{over(m['idle_rss_mib']['llama-server']):>14.0f} {ri:>6.2f}")
    targets.append(("idle RSS over the model file <= llama-server", ri, ri <= 1.0,
                    f"{over(m['idle_rss_mib']['llmd']):.0f} vs {over(m['idle_rss_mib']['llama-server']):.0f} MiB"))
    rp = over(m["peak_rss_mib"]["llmd"]) / over(m["peak_rss_mib"]["llama-server"])
    lines.append(f"{'peak RSS over file (MiB)':<28} {over(m['peak_rss_mib']['llmd']):>14.0f} "
                 f"{over(m['peak_rss_mib']['llama-server']):>14.0f} {rp:>6.2f}")
    for key, label in (("final_rss_mib", "RSS after the run (MiB)"), ("final_peak_rss_mib", "peak RSS, whole run (MiB)")):
        a, z = m[key]["llmd"], m[key]["llama-server"]
        lines.append(f"{label:<28} {a:>14.0f} {z:>14.0f} {a / z:>6.2f}")
    ck = results["checkpoints"]
    g = lambda k: int(ck[k]) if ck.get(k) is not None else "n/a"
    mib = f"{ck['checkpoint_bytes'] / 2**20:.1f} MiB" if ck.get("checkpoint_bytes") is not None else "n/a"
    lines.append(f"llmd checkpoints after the run: {g('checkpoints')} held, {mib}; "
                 f"{g('checkpoint_hits_total')} hits, {g('checkpoint_misses_total')} misses, "
                 f"{g('prefix_copies_total')} prefix copies; "
                 f"{g('cached_prompt_tokens_total')} of {g('prompt_tokens_total')} prompt tokens from the cache")
    lines += ["", f"Physical limit: {b['read_gb_per_s']:.1f} GB/s read, {b['bytes_per_token'] / 2**20:.0f} MiB per token "
                  f"-> at most {b['limit_tok_s']:.1f} tok/s; llmd decode reaches {b['llmd_fraction']:.0%}, "
                  f"llama-bench {b['llama_bench_fraction']:.0%}", "", "Targets (reported, never enforced)"]
    for label, r, ok, nums in targets:
        lines.append(f"  [{'met' if ok else 'NOT met'}] {label}: {r:.3f} ({nums})")
    results["targets"] = [{"target": t, "ratio": r, "met": ok, "numbers": nums} for t, r, ok, nums in targets]
    return "\n".join(lines)


def chart(o, results, png):
    if not shutil.which("gnuplot"):
        progress("gnuplot not found: no chart")
        return False
    dat = os.path.join(o.out, "load.dat")
    with open(dat, "w") as f:
        for name in ("llmd-native", "llmd-http", "llama-server"):
            f.write(f'"{name}"\n')
            for n in o.clients:
                d = results["load"][name][str(n)]
                f.write(f"{n} {d['tok_s']['median']:.3f} {d['ttft_p50_ms']:.3f} {d['ttft_p95_ms']:.3f}\n")
            f.write("\n\n")
    script = f"""set terminal pngcairo noenhanced size 1100,420 font ",10"
set output "{png}"
set multiplot layout 1,2 title "{results['machine']['model']}, {o.threads} threads: llmd vs llama-server"
set key top left
set xlabel "concurrent clients"; set xtics ({', '.join(map(str, o.clients))}); set grid
set ylabel "aggregate tok/s"; set yrange [0:*]
plot for [i=0:2] "{dat}" index i using 1:2 with linespoints lw 2 title columnheader(1)
set ylabel "TTFT p50 (ms)"
plot for [i=0:2] "{dat}" index i using 1:3 with linespoints lw 2 title columnheader(1)
unset multiplot
"""
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        progress("gnuplot failed: " + r.stderr[-500:])
        return False
    return True



def write_results(out, stem, results, table):
    """Prints the table and writes OUT/STEM.json (every number) and the table beside it."""
    print(table)
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out, "table.txt" if stem == "results" else stem + ".txt"), "w") as f:
        f.write(table + "\n")

def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--model", required=True)
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    a.add_argument("--reps", type=int, default=5)
    a.add_argument("--quick", action="store_true", help="one repetition, small sizes: a smoke test")
    a.add_argument("--hybrid", action="store_true", help="the model is hybrid (Qwen3.5-shaped): say so in the report")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-results"))
    o = a.parse_args()
    b = o.build
    o.llmd, o.llama_bench = os.path.join(b, "src", "llmd"), os.path.join(b, "bin", "llama-bench")
    o.llama_server, o.bandwidth_probe = os.path.join(b, "bin", "llama-server"), os.path.join(b, "bench", "bandwidth_probe")
    if o.quick:
        o.reps, o.pp_short, o.pp_long, o.tg, o.tokens, o.requests, o.system_tokens = 1, 32, 64, 16, 8, 1, 100
    else:
        o.pp_short, o.pp_long, o.tg, o.tokens, o.requests, o.system_tokens = 128, 512, 128, 64, 4, 400
    o.clients, o.context = [1, 4], 2048
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "work")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    results = {"machine": machine(o), "hybrid": o.hybrid}
    progress(f"{results['machine']['model']}, {o.threads} threads, {o.reps} rep(s); logs in {workdir}")
    engine_limit(o, workdir, results)
    serving(o, workdir, results)
    bandwidth(o, results)
    table = report(o, results)
    write_results(o.out, "results", results, table)
    png = os.path.join(o.out, "load.png")
    made = chart(o, results, png)
    progress(f"wrote {o.out}/results.json, table.txt" + (", load.png" if made else ""))


if __name__ == "__main__":
    main()
