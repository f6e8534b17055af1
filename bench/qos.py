#!/usr/bin/env python3
"""Request classes: a person waiting beside background work (issue 26's seed scenario).

Three contenders on the same model file, threads, 4 slots and context per slot, all loaded at
once and each row run against one after another (an idle server computes nothing), so two
contenders' rows are minutes apart, not a whole run:
  llmd-classes   llmd --parallel 4 --reserved-sequences 3 (the default), the interactive client's UID (root)
                 mapped to interactive, the background clients' UIDs (65534, 65533) to background
  llmd-off       the same flags without --request-class (everyone normal), --reserved-sequences 0
  llama-server   -np 4, -c 4 x the context per slot
Every client speaks OpenAI chat completions with streaming (llmd: over its HTTP Unix socket,
llama-server: loopback TCP); TTFT is the time to the first content delta. Background clients
run in child processes as uid 65534 (nobody) and 65533, so llmd sees real peer UIDs.

Workload:
  interactive  a short system prompt and question, max_tokens 8 (ignore_eos), one at a time on
               a 1.5 s schedule: request k at 1.5 k s or, if the one before has not answered by
               then, as soon as it has (never two at once); --samples requests (40) or as many as
               start within 60 s, whichever is fewer (a FIFO server under load answers slowly);
               one with no first token after 60 s is cut and counted at 60 s
  background   N clients (4, then 8) looping 250-word prompts (random words, new each time, so
               no cache hits) with 96-token answers (ignore_eos: every answer is 96 tokens)
Rows per contender: the interactive client alone (idle); under N background clients; under 4
with one of them sending a ~4,000-token prompt instead. For each: interactive TTFT p50/p95,
p95 / idle p95, the background clients' aggregate tok/s over the same window for every contender
(content deltas received in the 60 s from the first interactive request, scaled by
completion_tokens / deltas of the finished requests), and llmd's preemptions (llmd_preemptions_total on /metrics, the change
over the row). Every row starts with every contender idle (/metrics shows nothing running or queued).
Fairness: uid 65533 sends the interactive-shaped request the same way on a 0.5 s schedule
alone, beside uid 65534 keeping 4 background requests in flight, and beside 65534 keeping 16;
65533's p95 TTFT and the ratios (both UIDs are background in llmd-classes, normal in llmd-off).
Serving: the scripts/bench 4-client row (4 clients x 4 chats of 64 tokens, one UID) for
llmd-off and llama-server over HTTP: with classes off llmd should match llama-server's p95.

Run through scripts/bench --qos (as root: the second UIDs need it). Writes OUT/qos.json (every
number, and each load row's timeline: when each request was sent, answered and ended, to see what
a slow answer waited behind) and OUT/qos.txt (markdown tables); prints the tables. It reports
targets, never fails on a speed.
"""
import argparse, http.client, json, os, shutil, signal, socket, stat, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import ROOT, Server, free_port, machine, pct, post_json, progress, scrape, text_of, write_results  # noqa: E402

PARALLEL = 4
INTERACTIVE_UID, BACKGROUND_UID, OTHER_UID = 0, 65534, 65533
SYSTEM = "You are the voice assistant of this device. Answer in one short sentence."
QUESTIONS = ("What time is it in Lisbon?", "Will it rain this afternoon?", "Set a timer for ten minutes.",
             "How far is the station?", "Who wrote this song?", "Turn the lights down, please.",
             "What is on my calendar today?", "Read my last message.", "How do I say thank you in Dutch?",
             "Is the oven still on?")
CONTENDERS = ("llmd-classes", "llmd-off", "llama-server")


# ---------------------------------------------------------------- clients (child processes)

class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def connect(target, timeout=900):
    if target.get("unix"):
        return UnixHTTPConnection(target["unix"], timeout)
    return http.client.HTTPConnection("127.0.0.1", target["port"], timeout=timeout)


class Aborter:
    """Open connections, so that a stop can cut the streams still running."""

    def __init__(self):
        self.lock, self.conns, self.stopped = threading.Lock(), set(), False

    def add(self, c):
        with self.lock:
            if self.stopped:
                return False
            self.conns.add(c)
            return True

    def remove(self, c):
        with self.lock:
            self.conns.discard(c)

    def abort_all(self):
        with self.lock:
            self.stopped = True
            for c in self.conns:
                try:
                    c.sock.shutdown(socket.SHUT_RDWR)
                except (OSError, AttributeError):
                    pass


def chat(target, messages, max_tokens, ignore_eos, aborter=None, on_first=None, ttft_cap=None):
    """One streamed chat completion: send time, TTFT, content-delta times, usage. With ttft_cap
    (s), a request with no first token by then is cut and marked censored (its TTFT is at least
    the cap): a FIFO server under load can take minutes."""
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "chat_template_kwargs": {"enable_thinking": False}}
    if ignore_eos:
        body["ignore_eos"] = True
    rec = {"send": time.monotonic(), "ttft": None, "stamps": [], "tokens": None, "prompt_tokens": None,
           "done": False, "error": None}
    c = connect(target)
    if aborter and not aborter.add(c):
        rec["error"], rec["end"] = "stopped", rec["send"]
        return rec
    timer = None
    if ttft_cap:
        def cut():
            if rec["ttft"] is None:
                rec["censored"] = True
                try:
                    c.sock.shutdown(socket.SHUT_RDWR)
                except (OSError, AttributeError):
                    pass
        timer = threading.Timer(ttft_cap, cut)
        timer.start()
    try:
        c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            rec["error"] = f"HTTP {r.status}: {r.read()[:200].decode(errors='replace')}"
            return rec
        while True:
            line = r.readline()
            if not line:
                break
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                rec["done"] = True
                break
            ev = json.loads(data)
            if ev.get("usage"):
                rec["tokens"] = ev["usage"].get("completion_tokens")
                rec["prompt_tokens"] = ev["usage"].get("prompt_tokens")
            if ev.get("error"):
                rec["error"] = json.dumps(ev["error"])[:200]
            for ch in ev.get("choices", []):
                if (ch.get("delta") or {}).get("content"):
                    now = time.monotonic()
                    if rec["ttft"] is None:
                        rec["ttft"] = now - rec["send"]
                        if on_first:
                            on_first()
                    rec["stamps"].append(now)
    except (OSError, http.client.HTTPException, ValueError) as e:
        rec["error"] = rec["error"] or f"{type(e).__name__}: {e}"
    finally:
        if timer:
            timer.cancel()
        if aborter:
            aborter.remove(c)
        c.close()
        rec["end"] = time.monotonic()
    if rec.get("censored"):
        rec["error"] = f"no first token within {ttft_cap} s"
    return rec


def emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def child_loop(spec):
    """N background clients, each sending its requests one after another until stdin says stop
    (or closes). Prints `first I` when client I's first request streams its first token."""
    aborter, stop, out, lock = Aborter(), threading.Event(), [], threading.Lock()

    def client(i):
        j, first = 0, [False]
        long = i == 0 and spec.get("long_words")
        while not stop.is_set() and (spec.get("requests") is None or j < spec["requests"]):
            words = spec["long_words"] if long else spec["words"]
            prompt = f"{spec['tag']} client {i} request {j}: " + text_of(words, (spec["tag"], i, j, spec["seed"]))

            def on_first(i=i):
                if not first[0]:
                    first[0] = True
                    emit(f"first {i}")
            r = chat(spec["target"], [{"role": "user", "content": prompt}], spec["max_tokens"], spec["ignore_eos"],
                     aborter, on_first)
            r["client"], r["long"], r["after_stop"] = i, bool(long), stop.is_set()
            with lock:
                out.append(r)
            if r["error"] and not stop.is_set():
                time.sleep(0.2)  # a refusal: retry, never spin
            j += 1

    th = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(spec["clients"])]
    [t.start() for t in th]
    if spec.get("requests") is None:
        for line in sys.stdin:
            if line.strip() == "stop":
                break
        stop.set()
        aborter.abort_all()
    for t in th:
        t.join(30 if stop.is_set() else None)
    with lock:
        emit("result " + json.dumps(out))


def child_paced(spec):
    """Interactive-shaped requests one at a time on an `interval` schedule: request k at
    k * interval, or, when the one before has not answered by then, as soon as it has. Stops
    after `samples`, or when `time_cap` s have passed."""
    out, lock = [], threading.Lock()
    t0 = time.monotonic()

    def one(k):
        q = QUESTIONS[(k + spec["seed"]) % len(QUESTIONS)]
        r = chat(spec["target"], [{"role": "system", "content": SYSTEM},
                                  {"role": "user", "content": f"{q} ({spec['tag']} {k})"}], spec["max_tokens"], True,
                 ttft_cap=spec.get("ttft_cap"))
        r["k"] = k
        with lock:
            out.append(r)

    for k in range(spec["samples"]):
        when = t0 + k * spec["interval"]
        if spec.get("time_cap") and k > 0 and time.monotonic() - t0 > spec["time_cap"]:
            break
        time.sleep(max(0.0, when - time.monotonic()))
        one(k)
    emit("result " + json.dumps(sorted(out, key=lambda r: r["k"])))


def child_main(spec):
    if spec["mode"] == "loop":
        child_loop(spec)
    else:
        child_paced(spec)


def reachable_by_others(path, mode):
    """Whether any UID may reach `path` (every directory above it o+x) and read or run it (mode:
    stat.S_IROTH or S_IXOTH)."""
    path = os.path.realpath(path)
    parts = path.split(os.sep)
    for i in range(2, len(parts)):
        if not os.stat(os.sep.join(parts[:i]) or os.sep).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & mode)


def child_command(workdir):
    """[python, this script] that the other UIDs can run: this interpreter when they can reach it
    (a pyenv under /root they cannot), else the system's; this script (and the two it imports)
    copied beside the sockets when they cannot read it where it is."""
    python = next((p for p in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")
                   if os.path.exists(p) and reachable_by_others(p, stat.S_IXOTH)), None)
    if python is None:
        sys.exit("bench/qos.py: no python3 that uid 65534 can run")
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(here, "qos.py")
    if not all(reachable_by_others(os.path.join(here, f), stat.S_IROTH) for f in ("qos.py", "suite.py", "load.py")):
        for f in ("qos.py", "suite.py", "load.py"):
            shutil.copy(os.path.join(here, f), workdir)
            os.chmod(os.path.join(workdir, f), 0o644)
        script = os.path.join(workdir, "qos.py")
    return [python, script]


class Clients:
    """A child process of clients running as `uid`: events on stdout, the records at the end."""
    command = None  # child_command()'s

    def __init__(self, o, uid, spec):
        kw = {} if uid == 0 else {"user": uid, "group": uid, "extra_groups": []}
        self.proc = subprocess.Popen([*Clients.command, "--child", json.dumps(spec)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/", **kw)
        self.firsts, self.result, self.cv = set(), None, threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                if line.startswith("first "):
                    self.firsts.add(int(line.split()[1]))
                elif line.startswith("result "):
                    self.result = json.loads(line[7:])
                self.cv.notify_all()
        with self.cv:
            self.cv.notify_all()

    def wait_firsts(self, need, exclude=(), limit=300):
        end = time.monotonic() + limit
        with self.cv:
            while len(self.firsts - set(exclude)) < need:
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise RuntimeError(f"background clients: {len(self.firsts)} of {need} streaming after {limit} s")
                self.cv.wait(min(left, 1))

    def finish(self, stop=True, limit=900):
        """Stops a loop (stdin `stop`) or waits for a paced run to end; returns the records."""
        if stop:
            try:
                self.proc.stdin.write("stop\n"); self.proc.stdin.flush()
            except OSError:
                pass
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(limit)
        except subprocess.TimeoutExpired:
            self.proc.kill(); self.proc.wait()
        self.reader.join(10)
        if self.result is None:
            raise RuntimeError(f"client process (pid {self.proc.pid}) ended with {self.proc.returncode} and no result")
        return self.result

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill(); self.proc.wait()


# ---------------------------------------------------------------- servers

def unix_get(path, url, timeout=10):
    c = UnixHTTPConnection(path, timeout)
    try:
        c.request("GET", url); r = c.getresponse(); return r.status, r.read().decode(errors="replace")
    finally:
        c.close()


def start_contender(o, name, workdir, sockdir):
    """Starts one contender; returns the Server with .target (client address) and .metrics()."""
    if name == "llama-server":
        port = free_port()
        s = Server(name, [o.llama_server, "-m", o.model, "-t", str(o.threads), "-np", str(PARALLEL),
                          "-c", str(o.context * PARALLEL), "--host", "127.0.0.1", "--port", str(port),
                          "--no-webui", "--metrics"], workdir)
        s.ready_s = s.wait_healthy(port)
        s.target = {"port": port}
        s.metrics = lambda: scrape(port, "")
        return s
    sock, http_sock = os.path.join(sockdir, name + ".sock"), os.path.join(sockdir, name + "-http.sock")
    uids = f"{INTERACTIVE_UID},{BACKGROUND_UID},{OTHER_UID}"
    classes = (["--request-class", f"uid:{INTERACTIVE_UID}=interactive,uid:{BACKGROUND_UID}=background,"
                                   f"uid:{OTHER_UID}=background", "--reserved-sequences", "3"]
               if name == "llmd-classes" else ["--reserved-sequences", "0"])
    s = Server(name, [o.llmd, "--model", o.model, "--threads", str(o.threads), "--parallel", str(PARALLEL),
                      "--context", str(o.context), "--max-new-tokens", "4096", "--rate-limit", "1000000",
                      "--queue-depth", "64", "--http-max-connections", "64", "--socket", sock,
                      "--http-socket", http_sock, "--allow-uid", uids, *classes], workdir)
    end = time.time() + 300
    while True:
        if s.proc.poll() is not None:
            raise RuntimeError(f"{name} exited: " + open(s.log_path).read()[-2000:])
        try:
            if unix_get(http_sock, "/health", 2)[0] == 200:
                break
        except OSError:
            pass
        if time.time() > end:
            raise RuntimeError(f"{name} not healthy after 300 s")
        time.sleep(0.02)
    s.ready_s = time.perf_counter() - s.started
    for p in (sock, http_sock):  # the background UIDs must reach them; the allowlist still decides
        os.chmod(p, 0o666)
    s.target = {"unix": http_sock}

    def metrics():
        try:
            status, body = unix_get(http_sock, "/metrics")
        except OSError:
            return {}
        m = {}
        for line in body.splitlines() if status == 200 else ():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                try:
                    m[key.split("{", 1)[0]] = m.get(key.split("{", 1)[0], 0.0) + float(value)
                except ValueError:
                    pass
        return m
    s.metrics = metrics
    return s


# ---------------------------------------------------------------- scenarios

def wait_idle(s, limit=180):
    """Until the server runs and queues nothing (a stopped client's stream may still be in a
    prefill step): every row starts on an idle server. Returns the seconds it took."""
    t0 = time.monotonic()
    busy = ("llmd_active_sequences", "llmd_queue_depth", "llamacpp:requests_processing", "llamacpp:requests_deferred")
    while time.monotonic() - t0 < limit:
        m = s.metrics()
        if m and not any(m.get(k, 0) for k in busy):
            return time.monotonic() - t0
        time.sleep(0.25)
    progress(f"  (the server was still busy after {limit} s)")
    return time.monotonic() - t0


def preemptions(before, after):
    key = "llmd_preemptions_total"
    return after[key] - before.get(key, 0) if key in after else None

def bg_spec(o, s, tag, clients, long_words=0, requests=None, max_tokens=None, words=None, ignore_eos=True):
    return {"mode": "loop", "target": s.target, "tag": tag, "clients": clients, "words": words or o.words,
            "long_words": long_words, "max_tokens": max_tokens or o.bg_tokens, "ignore_eos": ignore_eos,
            "requests": requests, "seed": o.seed}


def paced_spec(o, s, tag, samples, interval, time_cap=None):
    return {"mode": "paced", "target": s.target, "tag": tag, "samples": samples, "interval": interval,
            "time_cap": time_cap, "max_tokens": o.interactive_tokens, "seed": o.seed,
            "ttft_cap": o.ttft_cap}


def ttft_stats(recs, cap=None):
    """p50/p95 over the answered requests and the censored ones (no first token within the cap:
    counted at the cap, so a p95 that lands on one is a lower bound, `p95_censored`)."""
    ok = [r for r in recs if r["ttft"] is not None and not r["error"]]
    cens = [r for r in recs if r.get("censored")]
    xs = sorted([r["ttft"] * 1000 for r in ok] + [(cap or 0) * 1000] * len(cens))
    p95 = pct(xs, 0.95)
    return {"n": len(xs), "censored": len(cens), "errors": len(recs) - len(ok) - len(cens), "p50_ms": pct(xs, 0.5),
            "p95_ms": p95, "p95_censored": bool(cens) and cap is not None and p95 >= cap * 1000,
            "p50_censored": bool(cens) and cap is not None and pct(xs, 0.5) >= cap * 1000, "ttft_ms": xs,
            "error_texts": sorted({r["error"] for r in recs if r["error"]})[:5]}


def background_stats(recs, t0, t1):
    """Aggregate generated tok/s over [t0, t1]: content deltas received in it, times the finished
    requests' completion_tokens / deltas (a delta is about one token)."""
    fin = [r for r in recs if r["done"] and r["tokens"]]
    scale = (sum(r["tokens"] for r in fin) / max(1, sum(len(r["stamps"]) for r in fin))) if fin else 1.0
    deltas = sum(1 for r in recs for x in r["stamps"] if t0 <= x <= t1)
    long = [r["prompt_tokens"] for r in recs if r.get("long") and r["prompt_tokens"]]
    errors = [r["error"] for r in recs if r["error"] and not r.get("after_stop")]  # not the streams a stop cut
    return {"tok_s": deltas * scale / (t1 - t0), "deltas": deltas, "scale": scale, "window_s": t1 - t0,
            "finished": len(fin), "requests": len(recs), "errors": len(errors), "error_texts": sorted(set(errors))[:5],
            "prompt_tokens": [r["prompt_tokens"] for r in fin if r["prompt_tokens"]][:3],
            "long_prompt_tokens": long[:3]}


def load_row(o, s, name, tag, clients, long_words=0):
    """The interactive client under `clients` background clients (the first sending a long prompt
    if long_words): TTFT, background tok/s over row_cap s from the first interactive request, preemptions."""
    progress(f"  {name}: {clients} background clients" + (f", one with a {long_words}-word prompt" if long_words else ""))
    idle_wait = wait_idle(s)
    before = s.metrics()
    bg = Clients(o, BACKGROUND_UID, bg_spec(o, s, tag, clients, long_words))
    inter = None
    try:
        # Warm-up: every slot the background can hold is streaming (the long prompt's client
        # may still be prefilling: that is what its row measures), then a moment more.
        bg.wait_firsts(min(clients, PARALLEL) - (1 if long_words else 0), exclude=(0,) if long_words else ())
        time.sleep(o.settle_s)
        inter = Clients(o, INTERACTIVE_UID, paced_spec(o, s, tag, o.samples, o.interval, o.row_cap))
        irecs = inter.finish(stop=False)
        # The background window: row_cap s from the first interactive request, the same for
        # every contender (the background keeps running that long): one that ended with the
        # interactive client's last answer was ~30 s where the interactive requests are
        # answered at once and up to ~70 s where they queue, and a 30 s window holds too few
        # of the background's prefill-heavy jobs to compare.
        t0 = min(r["send"] for r in irecs)
        t1 = t0 + o.row_cap
        time.sleep(max(0.0, t1 - time.monotonic()))
    finally:
        if inter:
            inter.kill()
        brecs = bg.finish()
    after = s.metrics()
    row = {"interactive": ttft_stats(irecs, o.ttft_cap), "background": background_stats(brecs, t0, t1), "clients": clients,
           "long_words": long_words, "idle_wait_s": idle_wait, "loadavg_after": os.getloadavg(),
           # The timeline, in s from the first interactive request: [send, ttft, end] and, for the
           # background, [client, send, ttft, end, tokens, long]: what each slow answer waited behind.
           "timeline": {"interactive": [[round(r["send"] - t0, 3), r["ttft"] and round(r["ttft"], 3),
                                         round(r["end"] - t0, 3)] for r in irecs],
                        "background": [[r["client"], round(r["send"] - t0, 3), r["ttft"] and round(r["ttft"], 3),
                                        round(r.get("end", r["send"]) - t0, 3), r["tokens"], r["long"]] for r in brecs]}}
    if preemptions(before, after) is not None:
        row["preemptions"] = preemptions(before, after)
    progress(f"    interactive p50 {row['interactive']['p50_ms']:.0f} ms, p95 {row['interactive']['p95_ms']:.0f} ms; "
             f"background {row['background']['tok_s']:.1f} tok/s; preemptions {row.get('preemptions', 'n/a')}")
    return row


def fairness(o, s, name):
    """uid 65533 one request at a time: alone, beside uid 65534 holding 4 requests in flight,
    and beside it holding 16."""
    out = {}
    for label, neighbour in (("alone", 0), ("neighbour_4", 4), ("neighbour_16", o.fair_neighbour)):
        progress(f"  {name}: fairness, the other UID " + (f"beside {neighbour} requests in flight" if neighbour else "alone"))
        idle_wait = wait_idle(s)
        before = s.metrics()
        nb, other = None, None
        try:
            if neighbour:
                nb = Clients(o, BACKGROUND_UID, bg_spec(o, s, f"fair{neighbour}", neighbour))
                nb.wait_firsts(min(neighbour, PARALLEL))
                time.sleep(o.settle_s)
            other = Clients(o, OTHER_UID, paced_spec(o, s, f"other{neighbour}", o.fair_samples, o.fair_interval,
                                                     o.fair_cap if neighbour else None))
            recs = other.finish(stop=False)
        finally:
            if other:
                other.kill()
            if nb:
                nb.finish()
        after = s.metrics()
        out[label] = ttft_stats(recs, o.ttft_cap)
        out[label]["idle_wait_s"] = idle_wait
        if preemptions(before, after) is not None:
            out[label]["preemptions"] = preemptions(before, after)
        progress(f"    p50 {out[label]['p50_ms']:.0f} ms, p95 {out[label]['p95_ms']:.0f} ms (n={out[label]['n']})")
    return out


def serving(o, s, name):
    """scripts/bench's 4-client serving row: 4 clients x `requests` chats of 64 tokens (12-word
    prompts), one UID, after a warm-up burst; TTFT over every rep, tok/s per rep."""
    reps = []
    for rep in range(o.serving_reps):
        progress(f"  {name}: 4-client serving row, rep {rep + 1}/{o.serving_reps}")
        wait_idle(s)
        c = Clients(o, INTERACTIVE_UID, bg_spec(o, s, f"serving{rep}", 4, requests=o.serving_requests,
                                                max_tokens=o.serving_tokens, words=12, ignore_eos=False))
        recs = c.finish(stop=False)
        wall = max(r.get("end", 0) for r in recs) - min(r["send"] for r in recs)
        reps.append({"tok_s": sum((r["tokens"] or len(r["stamps"])) for r in recs) / wall, "recs": recs})
    allr = [r for rep in reps for r in rep["recs"]]
    st = ttft_stats(allr)
    st["tok_s"] = [rep["tok_s"] for rep in reps]
    # Each request's send time from its rep's first send and its TTFT (s): when a slow one came.
    st["requests"] = []
    for rep in reps:
        t0 = min(r["send"] for r in rep["recs"])
        st["requests"].append([[round(r["send"] - t0, 3), None if r["ttft"] is None else round(r["ttft"], 3)]
                               for r in rep["recs"]])
    return st


def long_prompt_tokens(o, s):
    """The long row's prompt in tokens, chat template included, as llama-server counts it."""
    try:
        prompt = post_json(s.target["port"], "/apply-template", {
            "messages": [{"role": "user", "content": "long client 0 request 0: " + text_of(o.long_words, "count")}],
            "chat_template_kwargs": {"enable_thinking": False}})["prompt"]
        return len(post_json(s.target["port"], "/tokenize", {"content": prompt, "add_special": True})["tokens"])
    except (OSError, RuntimeError, KeyError, ValueError) as e:
        progress(f"  (no token count from llama-server: {e})")
        return None


def start_warm(o, name, workdir, sockdir):
    """Starts a contender and warms it up: a burst of background-shaped requests (first-batch
    page faults are not steady state) and the interactive request (its system prompt is then
    warm, as it would be)."""
    progress(f"{name}: starting")
    s = start_contender(o, name, workdir, sockdir)
    try:
        Clients(o, BACKGROUND_UID, bg_spec(o, s, "warm", PARALLEL, requests=1, max_tokens=4)).finish(stop=False)
        Clients(o, INTERACTIVE_UID, paced_spec(o, s, "warm", 2, 0.2)).finish(stop=False)
    except BaseException:
        s.stop()
        raise
    return s


def idle_row(o, s, name):
    progress(f"  {name}: interactive alone (idle)")
    wait_idle(s)
    d = ttft_stats(Clients(o, INTERACTIVE_UID, paced_spec(o, s, "idle", o.samples, o.interval)).finish(stop=False),
                   o.ttft_cap)
    progress(f"    p50 {d['p50_ms']:.0f} ms, p95 {d['p95_ms']:.0f} ms")
    return d


def scenarios(o):
    """Each row as (path in a contender's results, for which contenders, how to run it)."""
    rows = [("idle", ("idle",), None, idle_row)]
    rows += [(f"load{n}", ("load", str(n)), None, lambda o, s, name, n=n: load_row(o, s, name, f"load{n}", n))
             for n in o.clients]
    rows += [("long", ("long",), None, lambda o, s, name: load_row(o, s, name, "long", o.long_clients, o.long_words)),
             ("fairness", ("fairness",), None, fairness),
             ("serving", ("serving",), ("llmd-off", "llama-server"), serving)]
    wanted = o.rows.split(",") if o.rows else None
    unknown = set(wanted or ()) - {row[0] for row in rows}
    if unknown:
        sys.exit(f"bench/qos.py: unknown --rows {','.join(sorted(unknown))}; the rows: {','.join(r[0] for r in rows)}")
    return [row[1:] for row in rows if wanted is None or row[0] in wanted]


def order_of(names, k):
    """Row k's order: the two llmd contenders back to back (their throughputs are compared), first
    one and then the other on alternate rows, so neither always runs after the other; llama-server
    last."""
    llmd = [n for n in names if n != "llama-server"]
    return (llmd if k % 2 == 0 else llmd[::-1]) + [n for n in names if n == "llama-server"]


def run_contenders(o, names, workdir, sockdir, results):
    """Every contender loaded at once (an idle one computes nothing) and each row run against them
    in turn, so the rows of two contenders are minutes apart, not a whole run: the VM drifts by a
    fifth within minutes. A contender that fails loses its remaining rows, not the run."""
    servers, R = {}, results["contenders"]
    try:
        for name in names:
            try:
                servers[name] = start_warm(o, name, workdir, sockdir)
                R[name] = {"ready_s": servers[name].ready_s}
            except (RuntimeError, OSError) as e:
                progress(f"{name} failed: {e}")
                results.setdefault("errors", {})[name] = str(e)[-1000:]
        for k, (path, only, run) in enumerate(scenarios(o)):
            for name in order_of([n for n in names if n in servers], k):
                if only and name not in only:
                    continue
                try:
                    # Every contender idle, not only this one: a row's stopped clients leave
                    # requests the server runs on until it sees them gone (llama-server's
                    # queued ones until they start), and they would share the CPU with the
                    # next contender's row.
                    others = {n: round(wait_idle(servers[n]), 2) for n in servers if n != name}
                    R[name].setdefault("others_idle_wait_s", {})["/".join(path)] = others
                    value = run(o, servers[name], name)
                except (RuntimeError, OSError) as e:
                    progress(f"{name} failed: {e}")
                    results.setdefault("errors", {})[name] = str(e)[-1000:]
                    servers.pop(name).stop()
                    continue
                node = R[name]
                for key in path[:-1]:
                    node = node.setdefault(key, {})
                node[path[-1]] = value
            with open(os.path.join(o.out, "qos.partial.json"), "w") as f:
                json.dump(results, f)
        for name, s in servers.items():
            if name == "llama-server":
                R[name]["long_prompt_tokens"] = long_prompt_tokens(o, s)
            else:
                m = s.metrics()
                R[name]["metrics_end"] = {k: v for k, v in m.items() if k.startswith("llmd_class") or k in (
                    "llmd_preemptions_total", "llmd_paused_sequences", "llmd_requests_total")}
    finally:
        for s in servers.values():
            s.stop()
    # A contender that failed part way has no row to report.
    for name in list(R):
        if name in results.get("errors", {}):
            del R[name]


# ---------------------------------------------------------------- report

def ratio(a, b):
    return a / b if b and b == b and a == a else float("nan")


def tt(d, which):
    """A TTFT percentile in ms, `>=` where it lands on a request cut at the cap."""
    return (">=" if d.get(which + "_censored") else "") + ms(d[which + "_ms"]) + " ms"


def ms(x):
    return f"{x:,.0f}" if x == x else "n/a"


def report(o, results):
    R, m = results["contenders"], results["machine"]
    lines = [f"Request classes (--qos): {m['model']}, {o.threads} threads, {PARALLEL} slots, {o.context} tokens per "
             f"slot; {m['cpu']}, {m['cores']} cores; commit {m['llmd_commit']}; {m['date']}",
             f"Interactive: a short system prompt and question, {o.interactive_tokens} tokens, one at a time on a "
             f"{o.interval} s schedule (a late one goes as soon as the one before has answered): {o.samples} requests "
             f"a row, or as many as start within {o.row_cap} s (n); a "
             f"request with no first token after {o.ttft_cap} s is cut and counted at {o.ttft_cap} s (>=). "
             f"Background: {o.words}-word prompts, {o.bg_tokens}-token answers, looping; "
             f"the long row: {o.long_clients} clients, one of them a ~{o.long_words}-word prompt "
             f"({results.get('long_prompt_tokens') or '?'} tokens). Background tok/s: over the {o.row_cap} s from "
             f"the first interactive request, for every contender.", ""]
    lines += ["| load | contender | interactive TTFT p50 | p95 (n) | p95 / idle p95 | background tok/s | vs llmd-off | "
              "preemptions |", "|---|---|---|---|---|---|---|---|"]
    long_tokens = results.get("long_prompt_tokens")
    rows = [("idle", None)] + [(f"{n} background", str(n)) for n in o.clients] + \
           [(f"{o.long_clients} background, one a {long_tokens or '~' + str(o.long_words)}-"
             f"{'token' if long_tokens else 'word'} prompt", "long")]
    for label, key in rows:
        for name in CONTENDERS:
            if name not in R:
                continue
            c = R[name]
            idle95 = c["idle"]["p95_ms"]
            if key is None:
                d = c["idle"]
                lines.append(f"| {label} | {name} | {tt(d, 'p50')} | {tt(d, 'p95')} ({d['n']}) | | | | |")
                continue
            row = c["long"] if key == "long" else c["load"][key]
            d, b = row["interactive"], row["background"]
            off = R.get("llmd-off", {})
            offb = (off.get("long") if key == "long" else off.get("load", {}).get(key)) if off else None
            vs = ratio(b["tok_s"], offb["background"]["tok_s"]) if offb else float("nan")
            err = f" ({d['errors']} failed)" if d["errors"] else ""
            pre = f"{row['preemptions']:.0f}" if "preemptions" in row else "n/a"
            lines.append(f"| {label} | {name} | {tt(d, 'p50')} | {tt(d, 'p95')} ({d['n']}){err} | "
                         f"{ratio(d['p95_ms'], idle95):.1f}x | {b['tok_s']:.1f} | {vs:.2f} | {pre} |")
    lines += ["", f"Fairness: uid {OTHER_UID} sends the interactive-shaped request one at a time (on a "
                  f"{o.fair_interval} s schedule, up to {o.fair_samples}, for at most {o.fair_cap} s beside a neighbour); uid "
                  f"{BACKGROUND_UID} keeps 4 or {o.fair_neighbour} background requests in flight. Both UIDs are "
                  "background in llmd-classes. p95 TTFT (samples):", "",
              "| contender | alone | beside 4 in flight | beside 16 in flight | 16 / alone | 16 / 4 |", "|---|---|---|---|---|---|"]
    for name in CONTENDERS:
        if name not in R:
            continue
        f = R[name]["fairness"]
        cell = lambda d: f"{tt(d, 'p95')} ({d['n']})"
        lines.append(f"| {name} | {cell(f['alone'])} | {cell(f['neighbour_4'])} | {cell(f['neighbour_16'])} | "
                     f"{ratio(f['neighbour_16']['p95_ms'], f['alone']['p95_ms']):.1f}x | "
                     f"{ratio(f['neighbour_16']['p95_ms'], f['neighbour_4']['p95_ms']):.2f}x |")
    if "serving" in R.get("llmd-off", {}) and "serving" in R.get("llama-server", {}):
        a, z = R["llmd-off"]["serving"], R["llama-server"]["serving"]
        lines += ["", f"Serving row (scripts/bench's, over HTTP): 4 clients x {o.serving_requests} chats of "
                      f"{o.serving_tokens} tokens, one UID, {o.serving_reps} rep(s):", "",
                  "| contender | tok/s | TTFT p50 | TTFT p95 | p95 / llama-server |", "|---|---|---|---|---|"]
        for name, d in (("llmd-off", a), ("llama-server", z)):
            lines.append(f"| {name} | {', '.join(f'{x:.1f}' for x in d['tok_s'])} | {tt(d, 'p50')} | "
                         f"{tt(d, 'p95')} | {ratio(d['p95_ms'], z['p95_ms']):.2f} |")

    targets = []
    if "llmd-classes" in R:
        c = R["llmd-classes"]
        for n in o.clients:
            r = ratio(c["load"][str(n)]["interactive"]["p95_ms"], c["idle"]["p95_ms"])
            targets.append((f"llmd-classes, {n} background clients: interactive p95 <= 1.5x idle p95", r, r <= 1.5,
                            f"{ms(c['load'][str(n)]['interactive']['p95_ms'])} vs {ms(c['idle']['p95_ms'])} ms"))
        r = ratio(c["long"]["interactive"]["p95_ms"], c["idle"]["p95_ms"])
        targets.append((f"llmd-classes, {o.long_clients} background with a long prompt: interactive p95 <= 1.5x idle "
                        "(the same target, the long row)", r, r <= 1.5,
                        f"{ms(c['long']['interactive']['p95_ms'])} vs {ms(c['idle']['p95_ms'])} ms"))
        if "llmd-off" in R:
            off = R["llmd-off"]
            for key, label in [(str(n), f"{n} background clients") for n in o.clients] + [("long", "the long row")]:
                a = (c["long"] if key == "long" else c["load"][key])["background"]["tok_s"]
                z = (off["long"] if key == "long" else off["load"][key])["background"]["tok_s"]
                targets.append((f"{label}: background tok/s with classes >= 0.85x llmd-off", ratio(a, z),
                                ratio(a, z) >= 0.85, f"{a:.1f} vs {z:.1f} tok/s"))
        f = c["fairness"]
        r = ratio(f["neighbour_16"]["p95_ms"], f["alone"]["p95_ms"])
        targets.append(("llmd-classes: a 16-request neighbour raises another background UID's p95 <= 2x (vs alone)", r,
                        r <= 2, f"{ms(f['neighbour_16']['p95_ms'])} vs {ms(f['alone']['p95_ms'])} ms"))
        r = ratio(f["neighbour_16"]["p95_ms"], f["neighbour_4"]["p95_ms"])
        targets.append(("llmd-classes: the same, against a neighbour holding 4 (the slots full, no queue)", r, r <= 2,
                        f"{ms(f['neighbour_16']['p95_ms'])} vs {ms(f['neighbour_4']['p95_ms'])} ms"))
    if "serving" in R.get("llmd-off", {}) and "serving" in R.get("llama-server", {}):
        a, z = R["llmd-off"]["serving"]["p95_ms"], R["llama-server"]["serving"]["p95_ms"]
        targets.append(("classes off, the 4-client serving row: p95 TTFT <= llama-server's", ratio(a, z), a <= z,
                        f"{ms(a)} vs {ms(z)} ms"))
    a, z = results["load_start"], results.get("load_end", results["load_start"])
    lines.append(f"\nLoad average (1, 5, 15 min) at start: {' '.join(f'{x:.2f}' for x in a)}; at end: "
                 f"{' '.join(f'{x:.2f}' for x in z)} (2 cores: the servers' own 2 threads make about 2).")
    for name, e in results.get("errors", {}).items():
        lines.append(f"\n{name} failed: {e.splitlines()[-1] if e else e}")
    lines += ["", "Targets (reported, never enforced):", ""]
    for label, r, ok, nums in targets:
        lines.append(f"- [{'met' if ok else 'NOT met'}] {label}: {r:.2f} ({nums})")
    results["targets"] = [{"target": t, "ratio": r, "met": ok, "numbers": n} for t, r, ok, n in targets]
    return "\n".join(lines)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_main(json.loads(sys.argv[2]))
        return
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--model", required=True)
    a.add_argument("--llmd", help="the llmd binary (default: BUILD/src/llmd)")
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--samples", type=int, help="interactive requests a row (default 40, --quick 3)")
    a.add_argument("--contenders", default=",".join(CONTENDERS), help="comma-separated subset, in order")
    a.add_argument("--quick", action="store_true", help="the tiny model, 3 samples, short answers: a smoke test")
    a.add_argument("--rows", help="comma-separated subset of idle,load4,load8,long,fairness,serving (default: all)")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-results"))
    o = a.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/qos.py: needs root (its background clients run as uid 65534 and 65533)")
    # Stopped by SIGTERM (or SIGINT, which a background job ignores by default): the finally
    # blocks stop the servers and the client processes.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(143))
    o.llmd, o.llama_server = o.llmd or os.path.join(o.build, "src", "llmd"), os.path.join(o.build, "bin", "llama-server")
    o.interval, o.interactive_tokens, o.clients, o.fair_neighbour, o.fair_interval = 1.5, 8, [4, 8], 16, 0.5
    o.long_clients, o.seed = 4, int(time.time())
    if o.quick:
        o.context, o.words, o.bg_tokens, o.samples = 1024, 60, 16, o.samples or 3
        o.long_words = o.context - 200  # the tiny model: as long as its context allows
        o.fair_samples, o.fair_cap, o.settle_s, o.row_cap, o.ttft_cap = 3, 10, 0.5, 20, 30
        o.serving_reps, o.serving_requests, o.serving_tokens = 1, 1, 16
    else:
        o.context, o.words, o.bg_tokens, o.samples = 4608, 250, 96, o.samples or 40
        o.long_words = 3950  # ~4,000 tokens with the template (the table prints the count)
        o.fair_samples, o.fair_cap, o.settle_s, o.row_cap, o.ttft_cap = 20, 30, 3, 60, 60
        o.serving_reps, o.serving_requests, o.serving_tokens = 2, 4, 64
    scenarios(o)  # an unknown --rows stops here, before anything starts
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "qos-work")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    sockdir = tempfile.mkdtemp(prefix="llmd-qos-")  # short socket paths; other UIDs may traverse it
    os.chmod(sockdir, 0o755)
    Clients.command = child_command(sockdir)
    # A private copy: another engineer's rebuild of build/src/llmd must not swap the binary
    # between the two llmd contenders.
    shutil.copy2(o.llmd, os.path.join(workdir, "llmd"))
    o.llmd = os.path.join(workdir, "llmd")
    if os.path.exists(o.llama_server):  # the same for llama-server (a clean rebuild removes it for a while)
        shutil.copy2(o.llama_server, os.path.join(workdir, "llama-server"))
        o.llama_server = os.path.join(workdir, "llama-server")
    mo = argparse.Namespace(**vars(o)); mo.reps = 1
    results = {"machine": machine(mo), "settings": {k: v for k, v in vars(o).items() if k not in ("build",)},
               "contenders": {}, "load_start": os.getloadavg()}
    progress(f"{results['machine']['model']}, {o.threads} threads, {o.samples} interactive samples a row; logs in {workdir}")
    try:
        run_contenders(o, o.contenders.split(","), workdir, sockdir, results)
    finally:
        shutil.rmtree(sockdir, ignore_errors=True)
    results["load_end"] = os.getloadavg()
    if o.rows:  # a subset of the rows: the table and targets need them all; the rows are in the JSON
        with open(os.path.join(o.out, "qos.json"), "w") as f:
            json.dump(results, f, indent=1)
        progress(f"wrote {o.out}/qos.json (rows {o.rows}: no table)")
        return
    longs = [c.get("long_prompt_tokens") for c in results["contenders"].values() if c.get("long_prompt_tokens")]
    longs += [t for c in results["contenders"].values() for t in c["long"]["background"]["long_prompt_tokens"]]
    results["long_prompt_tokens"] = longs[0] if longs else None
    write_results(o.out, "qos", results, report(o, results))
    progress(f"wrote {o.out}/qos.json and qos.txt")


if __name__ == "__main__":
    main()
