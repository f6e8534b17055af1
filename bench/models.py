#!/usr/bin/env python3
"""Models on demand: what it costs to load a model when a request first names it, llmd vs
llama-server's router mode, and what the daemon holds with several models available.

Three GGUFs of one shape (different seeds) are linked into one models directory as model-a,
model-b and model-c. Every contender gets the same files, threads, one slot of CONTEXT tokens.
llmd runs with --model DIR/model-a.gguf --models-dir DIR: model-a is its default (loaded at
start), model-b and model-c load when a request names them. Each repetition, per contender,
for model-b then model-c:
  1. cold first token: a streamed chat naming the model while it is not loaded (OpenAI
     /v1/chat/completions for both, client-side time to the first delta);
  2. warm TTFT: the next chat to the same model, a fresh prompt of the same length (nothing of
     it cached), the model loaded;
  3. llmd's load time alone: before those two, the model is loaded by itself with Ollama's load
     request (/api/generate naming it, no prompt: answered once it is loaded), timed by the
     client, and unloaded again; also the loader's own load_ms of the cold load
     (model_loaded_on_demand: the pre-check, the engine, the warm-up and the worker; the size
     estimate and the queue before it are not in it);
then the model is unloaded (llmd: Ollama's keep_alive 0; the router: the next model evicts it,
--models-max 1). llama-server's router (`--models-dir DIR --models-max 1`) starts a child
llama-server per model; its load time is not reported apart (it is inside its cold row).
Memory (VmRSS, MiB), after one chat on model-a: a single-model llmd (--model model-a), llmd
with the directory (model-b and model-c available, not loaded), and that llmd once model-b
and model-c are loaded too; the router with one model loaded (its processes summed), for
reference. Contenders alternate between repetitions (A B, then B A). Medians.
Targets: llmd's cold first token <= its load time + 1.1 x its warm TTFT; RSS with one model in
use <= 1.1 x the single-model daemon's.
Run through scripts/bench --models [--quick]; writes OUT/models.json and OUT/models.txt.
"""
import argparse, http.client, json, os, re, shutil, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import ROOT, Contenders, Server, free_port, http_request, machine, med, progress, text_of, write_results
from footprint import load_average, proc_status

CONTEXT = 4096                   # one slot, for every contender
NAMES = ("model-a", "model-b", "model-c")
ON_DEMAND = NAMES[1:]            # loaded when asked for; model-a is llmd's default
COLD_TARGET, RSS_TARGET = 1.1, 1.1


def models_dir(o, workdir):
    """DIR with the three files under the names requests use: hard links (a symlink would lead
    out of llmd's models directory, which its catalog refuses), copies across file systems."""
    d = os.path.join(workdir, "models")
    os.makedirs(d)
    for name, path in zip(NAMES, o.models):
        try:
            os.link(path, os.path.join(d, name + ".gguf"))
        except OSError:
            shutil.copy2(path, os.path.join(d, name + ".gguf"))
    return d


def call(s, key, method, path, body=None):
    """One JSON request to a contender over TCP; (status, parsed body or None)."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = c.getresponse(); data = r.read(); c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, None


def chat(s, key, model, o, seed):
    """One greedy streamed chat of o.words fresh words to `model`."""
    msgs = [{"role": "user", "content": f"Request {seed} {time.time()}: " + text_of(o.words, seed)}]
    return http_request(s.port, key, msgs, o.tokens, extra={"model": model})


def llmd_loaded(s, key):
    status, body = call(s, key, "GET", "/api/ps")
    return [m["name"] for m in (body or {}).get("models", [])] if status == 200 else []


def llmd_unload(s, key, model, limit=120):
    """Ollama's unload (keep_alive 0), then waits until /api/ps no longer lists it."""
    call(s, key, "POST", "/api/generate", {"model": model, "keep_alive": 0})
    end = time.time() + limit
    while model in llmd_loaded(s, key):
        if time.time() > end:
            raise RuntimeError(f"{model} still loaded {limit} s after keep_alive 0")
        time.sleep(0.05)


def llmd_load(s, key, model):
    """Ollama's load request (no prompt): milliseconds until the model is loaded and answers."""
    t0 = time.perf_counter()
    status, body = call(s, key, "POST", "/api/generate", {"model": model})
    if status != 200 or (body or {}).get("done_reason") != "load":
        raise RuntimeError(f"load request for {model}: HTTP {status} {str(body)[:200]}")
    return (time.perf_counter() - t0) * 1000


def llmd_load_ms(s, model):
    """The loader's load_ms of the last load of `model` (from llmd's log)."""
    found = re.findall(r"model_loaded_on_demand name=" + re.escape(model) + r" .*?load_ms=(\d+)", open(s.log_path).read())
    return float(found[-1]) if found else None


def rss_tree_mib(pid):
    """VmRSS of a process and its descendants (the router and its model children), MiB."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += proc_status(p).get("VmRSS", 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass  # gone meanwhile
    return total


def llmd_session(o, c, d, rep):
    """llmd with the directory: RSS with model-a in use, then cold, warm and load time of each
    on-demand model, then RSS with all three loaded."""
    s = c.start_llmd(f"llmd-dir-r{rep}", extra=["--models-dir", d])
    m = {"ready_ms": s.ready_s * 1000, "cold_ms": [], "warm_ms": [], "load_ms": [], "loader_ms": []}
    try:
        chat(s, c.key, NAMES[0], o, (rep, "a"))
        time.sleep(1)
        m["rss_one_in_use"] = proc_status(s.proc.pid)["VmRSS"]
        for model in ON_DEMAND:
            if model in llmd_loaded(s, c.key):
                raise RuntimeError(f"{model} is loaded before its cold request")
            m["load_ms"].append(llmd_load(s, c.key, model))
            llmd_unload(s, c.key, model)
            m["cold_ms"].append(chat(s, c.key, model, o, (rep, model, "cold"))["ttft"] * 1000)
            m["loader_ms"].append(llmd_load_ms(s, model))
            m["warm_ms"].append(chat(s, c.key, model, o, (rep, model, "warm"))["ttft"] * 1000)
            llmd_unload(s, c.key, model)
        for model in ON_DEMAND:  # all three loaded (models_keep_alive keeps them)
            chat(s, c.key, model, o, (rep, model, "all"))
        if sorted(llmd_loaded(s, c.key)) != sorted(NAMES):
            raise RuntimeError(f"expected all three loaded, /api/ps says {llmd_loaded(s, c.key)}")
        time.sleep(1)
        m["rss_all_loaded"] = proc_status(s.proc.pid)["VmRSS"]
    finally:
        s.stop()
    return m


def single_session(o, c, rep):
    """A single-model llmd (no models directory) after one chat: the RSS baseline."""
    s = c.start_llmd(f"llmd-single-r{rep}")
    try:
        chat(s, c.key, NAMES[0], o, (rep, "single"))
        time.sleep(1)
        return {"rss": proc_status(s.proc.pid)["VmRSS"], "ready_ms": s.ready_s * 1000}
    finally:
        s.stop()


def router_session(o, c, d, rep):
    """llama-server's router on the same directory, one model at a time: each on-demand model
    cold (the one before it evicted), then warm; RSS of its processes with one loaded."""
    port = free_port()
    s = Server(f"llama-server-router-r{rep}",
               [o.llama_server, "--models-dir", d, "--models-max", "1", "-t", str(o.threads), "-np", "1",
                "-c", str(CONTEXT), "--host", "127.0.0.1", "--port", str(port), "--no-webui"], c.workdir)
    s.port = port
    s.ready_s = s.wait_healthy(port)
    m = {"cold_ms": [], "warm_ms": []}
    try:
        for model in ON_DEMAND:
            m["cold_ms"].append(chat(s, c.key, model, o, (rep, model, "router-cold"))["ttft"] * 1000)
            m["warm_ms"].append(chat(s, c.key, model, o, (rep, model, "router-warm"))["ttft"] * 1000)
        m["rss_one_loaded"] = rss_tree_mib(s.proc.pid)
    finally:
        s.stop()
    return m


def flat(runs, key):
    out = []
    for r in runs:
        v = r.get(key)
        out += [x for x in v if x is not None] if isinstance(v, list) else ([v] if v is not None else [])
    return out


def report(o, res):
    llmd, single, router = res["llmd"], res["single"], res["router"]
    cold, warm, load = med(flat(llmd, "cold_ms")), med(flat(llmd, "warm_ms")), med(flat(llmd, "load_ms"))
    loader = med(flat(llmd, "loader_ms"))
    r_cold, r_warm = med(flat(router, "cold_ms")), med(flat(router, "warm_ms"))
    one, alone, every = med(flat(llmd, "rss_one_in_use")), med(flat(single, "rss")), med(flat(llmd, "rss_all_loaded"))
    bound = load + COLD_TARGET * warm
    ok = lambda good: "ok" if good else "MISS"
    f = lambda x: "-" if x != x else f"{x:.0f}"  # NaN: no sample
    lines = [f"models on demand: 3 x {os.path.basename(o.models[0])} ({res['machine']['model_mib']} MiB), "
             f"{o.threads} threads, 1 slot of {CONTEXT} tokens, {o.reps} rep(s), {o.words}-word prompts",
             "",
             f"{'':34}{'llmd':>10}{'llama-server router':>22}",
             f"{'model load alone (ms)':34}{f(load):>10}{'-':>22}",
             f"{'  of which the loader (log)':34}{f(loader):>10}{'-':>22}",
             f"{'cold first token (ms)':34}{f(cold):>10}{f(r_cold):>22}",
             f"{'warm TTFT, model loaded (ms)':34}{f(warm):>10}{f(r_warm):>22}",
             f"target: cold <= load + {COLD_TARGET} x warm = {f(bound)} ms: {ok(cold <= bound)}",
             "",
             f"{'RSS (MiB) after a chat on model-a':34}{'llmd':>10}",
             f"{'single-model daemon':34}{f(alone):>10}",
             f"{'3 available, 1 in use':34}{f(one):>10}{'':4}{one / alone:.2f}x single",
             f"{'all 3 loaded':34}{f(every):>10}{'':4}{every / alone:.2f}x single",
             f"{'llama-server router, 1 loaded':34}{f(med(flat(router, 'rss_one_loaded'))):>10}  (router + child)",
             f"target: 1 in use <= {RSS_TARGET} x single: {ok(one <= RSS_TARGET * alone)}"]
    if res["errors"]:
        lines += ["", "errors:"] + [f"  {e}" for e in res["errors"]]
    return "\n".join(lines)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--models", nargs=3, required=True, metavar="GGUF", help="three model files of one shape")
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    a.add_argument("--reps", type=int, default=3)
    a.add_argument("--quick", action="store_true", help="one repetition, short prompts: a smoke test")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-results"))
    o = a.parse_args()
    o.llmd = os.path.join(o.build, "src", "llmd")
    o.llama_server = os.path.join(o.build, "bin", "llama-server")
    o.model = o.models[0]  # what machine() describes
    o.words, o.tokens = (40, 4) if o.quick else (100, 16)
    if o.quick:
        o.reps = 1
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "work-models")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    d = models_dir(o, workdir)
    res = {"machine": machine(o), "load_before": load_average(), "llmd": [], "single": [], "router": [], "errors": []}
    o.model = os.path.join(d, NAMES[0] + ".gguf")  # llmd's --model: its default is named model-a
    c = Contenders(o, workdir, parallel=1, context=CONTEXT)
    progress(f"{res['machine']['model']} x 3, {o.threads} threads, {o.reps} rep(s); logs in {workdir}")
    sessions = [("llmd", lambda rep: llmd_session(o, c, d, rep)), ("single", lambda rep: single_session(o, c, rep)),
                ("router", lambda rep: router_session(o, c, d, rep))]
    for rep in range(o.reps):
        for name, run in (sessions if rep % 2 == 0 else sessions[::-1]):
            progress(f"  rep {rep + 1}/{o.reps}: {name}")
            try:
                res[name].append(run(rep))
            except (RuntimeError, OSError) as e:  # a contender that fails loses its rows, not the run
                progress(f"  {name} failed: {e}")
                res["errors"].append(f"{name} rep {rep + 1}: {str(e)[-300:]}")
    res["load_after"] = load_average()
    write_results(o.out, "models", res, report(o, res))


if __name__ == "__main__":
    main()
