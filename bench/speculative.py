#!/usr/bin/env python3
"""Speculative decoding, llmd vs llama-server, side by side on the same files and threads.

Random weights make real acceptance meaningless, so most rows fix it: with --spec-synth-len L
(both servers, benchmarking only) each draft token is accepted at random so that the mean
accepted length is L, while the target still computes every position. The text is not the
model's; the speed is what an acceptance of L would give. One pair of rows measures a real
acceptance: a Q4_0 draft written from the same seed as its Q8_0 target.

Rows, each 1 and 4 clients, decode tok/s (1 client: one stream's decode rate; 4 clients: all
tokens / the longest request), and the acceptance each server reports:
  off                      both servers without speculation
  draft, real acceptance   the tiny model drafting for the 0.6B target, no synthetic help:
                           what speculation costs when it does not pay
  L=1.5|2.5|4, max N       draft mode, the tiny model drafting for the 0.6B target
  real, Q4_0 draft         the 0.6B Q8_0 target, its own weights at Q4_0 drafting
  mtp ...                  the hybrid 0.8B with its MTP layer (--mtp-target): off, its real
                           acceptance (max 4), and L=1.5|2.5|4 with draft-max 4 and 16
                           (llama-server --spec-type draft-mtp)
The bandwidth cap (read GB/s / bytes read per token) is printed beside: above it, only
speculation can go.

Run through scripts/bench --speculative, which builds and writes the models first.
"""
import argparse, json, os, re, shutil, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite import Contenders, med, progress, text_of, write_results, ROOT  # noqa: E402
import suite  # noqa: E402


def stream(port, key, user, max_tokens, seed):
    """One greedy streamed chat completion that never ends early (ignore_eos): its decode rate
    and the server's own draft counters."""
    r = suite.http_request(port, key, [{"role": "user", "content": user}], max_tokens,
                           extra={"ignore_eos": True, "seed": seed})
    drafted, accepted = draft_counts(r["usage"], r["timings"])
    return {"tokens": r["tokens"], "wall": r["wall"], "decode_s": r["wall"] - r["ttft"],
            "drafted": drafted, "accepted": accepted}


def draft_counts(usage, timings):
    """llama-server reports timings.draft_n / draft_n_accepted; llmd usage.draft_tokens /
    accepted_draft_tokens (docs/http.md)."""
    if timings and "draft_n" in timings:
        return timings["draft_n"], timings.get("draft_n_accepted", 0)
    usage = usage or {}
    return usage.get("draft_tokens", 0), usage.get("accepted_draft_tokens", 0)


def measure(server, key, o, rep):
    """1 client (two requests, one after the other) and 4 at once."""
    stream(server.port, key, "warm up", 8, 0)
    one = [stream(server.port, key, text_of(12, f"one-{rep}-{i}"), o.tokens, i) for i in range(2)]
    rows = {"1": {"tok_s": med([(r["tokens"] - 1) / r["decode_s"] for r in one if r["decode_s"] > 0]),
                  "drafted": sum(r["drafted"] for r in one), "accepted": sum(r["accepted"] for r in one)}}
    out = [None] * 4
    def run(i):
        out[i] = stream(server.port, key, text_of(12, f"four-{rep}-{i}"), o.tokens, 10 + i)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    rows["4"] = {"tok_s": sum(r["tokens"] for r in out) / wall, "drafted": sum(r["drafted"] for r in out),
                 "accepted": sum(r["accepted"] for r in out)}
    return rows


def configs(o):
    """(name, target, llmd flags, llama-server flags) for every row."""
    out = [("off", o.target, [], []),
           # The tiny random model's real acceptance against the 0.6B target is about nothing:
           # what speculation costs when it does not pay.
           ("draft, real acceptance, max 4", o.target,
            ["--speculative", "draft", "--draft-model", o.draft, "--draft-max", "4"],
            ["-md", o.draft, "--spec-type", "draft-simple", "--spec-draft-n-max", "4"])]
    for n in o.draft_max:
        for L in o.lengths:
            if L > n + 1:
                continue
            common = ["--spec-synth-len", str(L)]
            out.append((f"L={L}, max {n}", o.target,
                        ["--speculative", "draft", "--draft-model", o.draft, "--draft-max", str(n), "--benchmark", *common],
                        ["-md", o.draft, "--spec-type", "draft-simple", "--spec-draft-n-max", str(n), *common]))
    if o.mtp_target:
        mtp = lambda n: (["--speculative", "mtp", "--draft-max", str(n)],
                         ["--spec-type", "draft-mtp", "--spec-draft-n-max", str(n)])
        out.append(("mtp: off", o.mtp_target, [], []))
        out.append(("mtp: real acceptance, max 4", o.mtp_target, *mtp(4)))
        for n in o.draft_max:
            for L in o.lengths:
                if L > n + 1:
                    continue
                lf, sf = mtp(n)
                out.append((f"mtp: L={L}, max {n}", o.mtp_target, [*lf, "--benchmark", "--spec-synth-len", str(L)],
                            [*sf, "--spec-synth-len", str(L)]))
    if o.real_target:
        out.append(("real, Q4_0 draft, off", o.real_target, [], []))
        out.append(("real, Q4_0 draft, max 4", o.real_target,
                    ["--speculative", "draft", "--draft-model", o.real_draft, "--draft-max", "4"],
                    ["-md", o.real_draft, "--spec-type", "draft-simple", "--spec-draft-n-max", "4"]))
    return out


def run_row(o, workdir, name, target, llmd_flags, server_flags, rep):
    res = {}
    o.model = target
    c = Contenders(o, workdir, parallel=4, context=1024)
    for tag, start in (("llmd", lambda: c.start_llmd(extra=llmd_flags)),
                       ("llama-server", lambda: start_server(c, server_flags))):
        progress(f"rep {rep + 1}: {name}: {tag}")
        s = start()
        try:
            res[tag] = measure(s, c.key, o, rep)
        finally:
            s.stop()
    return res


def start_server(c, extra):
    if "--spec-type" in extra:
        # llama-server drafts on a second thread pool (the draft model's, or the MTP layer's);
        # with both pools polling (its default, 50) two pools of 2 threads spin in each other's
        # way on 2 cores: MTP at L=2.5 measured 10.5 tok/s that way and 17.7 with polling off.
        # Its speculative rows get the better setting; llmd shares one pool between the two.
        extra = [*extra, "--poll", "0", "--spec-draft-poll", "0"]
    port = suite.free_port()
    s = suite.Server("llama-server", [c.o.llama_server, "-m", c.o.model, "-t", str(c.o.threads), "-np", str(c.parallel),
                                      "-c", str(c.context * c.parallel), "--host", "127.0.0.1", "--port", str(port),
                                      "--no-webui", *extra], c.workdir)
    s.port, s.native = port, None
    s.ready_s = s.wait_healthy(port)
    return s


def report(o, results):
    lines = [f"Speculative decoding: {os.path.basename(o.target)} target, {os.path.basename(o.draft)} draft, "
             f"{o.threads} threads, {o.tokens} tokens a request, {o.reps} rep(s); medians",
             f"bandwidth cap (no speculation): {results['cap_tok_s']:.1f} tok/s "
             f"({results['read_gb_per_s']:.1f} GB/s / {results['bytes_per_token'] / 2**20:.0f} MiB a token)"
             + (f"; the MTP target's: {results['mtp_cap_tok_s']:.1f} tok/s "
                f"({results['mtp_bytes_per_token'] / 2**20:.0f} MiB a token)" if "mtp_cap_tok_s" in results else ""),
             "",
             "| row | clients | llmd tok/s | llama-server tok/s | llmd / server | llmd accepted/drafted | server accepted/drafted |",
             "|---|---|---|---|---|---|---|"]
    for name, per in results["rows"].items():
        for clients in ("1", "4"):
            a = med([r["llmd"][clients]["tok_s"] for r in per])
            b = med([r["llama-server"][clients]["tok_s"] for r in per])
            acc = lambda tag: "{}/{}".format(sum(r[tag][clients]["accepted"] for r in per),
                                             sum(r[tag][clients]["drafted"] for r in per))
            lines.append(f"| {name} | {clients} | {a:.1f} | {b:.1f} | {a / b if b else float('nan'):.2f} | "
                         f"{acc('llmd')} | {acc('llama-server')} |")
    return "\n".join(lines)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--build", default=os.path.join(ROOT, "build"))
    a.add_argument("--target", required=True)
    a.add_argument("--draft", required=True)
    a.add_argument("--real-target", help="a Q8_0 target whose --real-draft is the same weights at Q4_0")
    a.add_argument("--real-draft")
    a.add_argument("--mtp-target", help="a qwen35 model with an MTP layer (llmd-mkmodel --arch qwen35 --mtp)")
    a.add_argument("--threads", type=int, default=min(4, os.cpu_count() or 1))
    a.add_argument("--reps", type=int, default=1)
    a.add_argument("--quick", action="store_true", help="one length, few tokens: a smoke test")
    a.add_argument("--rows", help="run only the rows whose name matches this regular expression (e.g. '^mtp')")
    a.add_argument("--out", default=os.path.join(ROOT, "build", "bench-speculative"))
    o = a.parse_args()
    b = o.build
    o.llmd, o.llama_server = os.path.join(b, "src", "llmd"), os.path.join(b, "bin", "llama-server")
    o.bandwidth_probe = os.path.join(b, "bench", "bandwidth_probe")
    o.tokens, o.lengths, o.draft_max = (16, [2.5], [4]) if o.quick else (128, [1.5, 2.5, 4], [4, 16])
    os.makedirs(o.out, exist_ok=True)
    workdir = os.path.join(o.out, "work")
    shutil.rmtree(workdir, ignore_errors=True); os.makedirs(workdir)
    probe = subprocess.run([o.bandwidth_probe, "--threads", str(o.threads), "--mib", "256" if o.quick else "1024"],
                           capture_output=True, text=True, check=True)
    bw = json.loads(probe.stdout)["read_gb_per_s"]
    results = {"read_gb_per_s": bw, "bytes_per_token": os.path.getsize(o.target),
               "cap_tok_s": bw * 1e9 / os.path.getsize(o.target), "rows": {}}
    if o.mtp_target:
        # The MTP block's weights are not read by a plain decode.
        results["mtp_bytes_per_token"] = os.path.getsize(o.mtp_target)
        results["mtp_cap_tok_s"] = bw * 1e9 / os.path.getsize(o.mtp_target)
    for rep in range(o.reps):
        for name, target, lf, sf in configs(o):
            if o.rows and not re.search(o.rows, name):
                continue
            results["rows"].setdefault(name, []).append(run_row(o, workdir, name, target, lf, sf, rep))
    write_results(o.out, "speculative", results, report(o, results))
    progress(f"wrote {o.out}/speculative.json and speculative.txt")


if __name__ == "__main__":
    main()
