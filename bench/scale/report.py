#!/usr/bin/env python3
"""report.py DIR AGENTS HEARTBEAT_INTERVAL HOG: bench-scale's table, from
DIR/api.json (bench_api.py's figures) and DIR/samples.jsonl (sample.py's).
Prints a "reason:" line for each figure that was not recorded; exits 1 when
the API bench's own figures are missing."""
import json
import os
import re
import sys


def dur_s(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", text.strip())
    if not m:
        return None
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, "m": 60, None: 1}[m.group(2)]


def main():
    d, agents, hb, hog = sys.argv[1], int(sys.argv[2]), dur_s(sys.argv[3]), sys.argv[4] == "1"
    reasons = []
    try:
        with open(os.path.join(d, "api.json")) as f:
            api = json.load(f)
    except (OSError, ValueError) as e:
        api = {}
        reasons.append("no figures from bench_api.py (%s): see %s/bench.log" % (e, d))
    samples = []
    try:
        with open(os.path.join(d, "samples.jsonl")) as f:
            samples = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        reasons.append("no samples (%s): see %s/run/sample.log" % (e, d))

    def row(k, v):
        print("%-48s %s" % (k, v))

    def fmt(v, spec="%.0f", unit=""):
        return "-" if v is None else (spec % v) + unit

    print("bench-scale: %d agents (heartbeat every %s s: %.0f/s), %s sessions, %s"
          % (agents, fmt(hb, "%g"), agents / hb if hb else 0, api.get("sessions", "?"),
             "CPU hog on CPU 0" if hog else "no hog"))
    row("figure", "value")
    row("sessions enqueued (201) / refused", "%s / %s" % (api.get("created", "-"),
                                                         api.get("refused", "-")))
    row("API enqueue rate", fmt(api.get("enqueue_rate"), unit=" creates/s"))
    row("POST /session latency p50 / p99", "%s / %s ms" % (fmt(api.get("post_p50_ms"), "%.1f"),
                                                         fmt(api.get("post_p99_ms"), "%.1f")))
    row("scheduled (registry) / still PENDING", "%s / %s" % (api.get("scheduled", "-"),
                                                           api.get("pending", "-")))
    row("placements/s, scheduler (published)", fmt(api.get("sched_rate")))
    row("placements/s, registry (recorded)", fmt(api.get("reg_rate")))
    row("placement latency p50 / p99 (release -> SCHEDULED)",
        "%s / %s ms" % (fmt(api.get("place_p50_ms")), fmt(api.get("place_p99_ms"))))
    row("registry lag p50 / p99 / max", "%s / %s / %s ms" % (
        fmt(api.get("reg_lag_p50_ms")), fmt(api.get("reg_lag_p99_ms")),
        fmt(api.get("reg_lag_max_ms"))))
    if api.get("reg_lag_p50_ms") is None:
        reasons.append("registry lag not recorded: no SessionScheduled read back from the bus")

    # from the first sample with every agent registered on (the scheduler,
    # held during the enqueue, does not answer its /metrics then)
    t_up = next((s["t"] for s in samples if s.get("agents") == agents), None)
    up = [s for s in samples if t_up is not None and s["t"] >= t_up]
    ages = [s["hb_oldest_s"] for s in up if s.get("hb_oldest_s") is not None]
    if ages and hb:
        row("heartbeat lag max (oldest ALIVE heartbeat - interval)",
            "%.1f s (oldest seen %.1f s, %d samples)" % (max(0.0, max(ages) - hb), max(ages),
                                                         len(ages)))
    else:
        row("heartbeat lag max", "-")
        reasons.append("heartbeat lag not recorded: no sample with all %d agents up and an age "
                       "from registry.agents" % agents)
    hbs = [s for s in up if s.get("hb_handled") is not None and s.get("hb_published") is not None]
    if len(hbs) >= 2 and hbs[-1]["t"] > hbs[0]["t"]:
        rate = (hbs[-1]["hb_handled"] - hbs[0]["hb_handled"]) / (hbs[-1]["t"] - hbs[0]["t"])
        backlog = max(s["hb_published"] - s["hb_handled"] for s in hbs)
        row("heartbeats handled by the registry",
            "%.0f/s (published - handled at most %.0f)" % (rate, backlog))
    else:
        row("heartbeats handled by the registry", "-")
        reasons.append("heartbeat counters not sampled (simagent or registry /metrics)")

    if samples:
        last = samples[-1]["hwm"]
        row("peak RSS per service (VmHWM)", ", ".join(
            "%s %.0f MiB" % (n, last[n] / 1024) for n in sorted(last)))
    t0 = api.get("t_enqueue_start")
    rel = api.get("release")
    before = [s for s in up if t0 and s["t"] < t0]
    first = samples[0] if samples else None
    for svc in ("scheduler", "registry"):
        if first and before and svc in first["rss"] and svc in before[-1]["rss"]:
            per = (before[-1]["rss"][svc] - first["rss"][svc]) * 1024 / agents
            row("%s RSS per agent" % svc, "%.1f KiB ((%.0f - %.0f MiB) / %d agents)"
                % (per / 1024, before[-1]["rss"][svc] / 1024, first["rss"][svc] / 1024, agents))
        else:
            row("%s RSS per agent" % svc, "-")
            reasons.append("%s RSS per agent: no sample before the first agent and after the "
                           "last one registered" % svc)
    created = api.get("created") or 0
    drain = [s for s in samples if rel and s["t"] >= rel]
    held = [s for s in samples if rel and t0 and t0 <= s["t"] < rel]
    if created and before and drain and "scheduler" in before[-1]["rss"]:
        base = (held[-1] if held else before[-1])["rss"]["scheduler"]
        peak = max(s["rss"].get("scheduler", 0) for s in drain)
        row("scheduler RSS per queued session", "%.2f KiB ((peak %.0f - %.0f MiB at the release)"
            " / %d sessions)" % ((peak - base) / created, peak / 1024, base / 1024, created))
    else:
        row("scheduler RSS per queued session", "-")
        reasons.append("scheduler RSS per queued session: no samples around the release")
    if created and before and held and "registry" in before[-1]["rss"]:
        base, top = before[-1]["rss"]["registry"], max(s["rss"]["registry"] for s in held)
        row("registry RSS per enqueued session", "%.3f KiB ((peak %.0f - %.0f MiB) / %d sessions,"
            " the sessions live in PostgreSQL)" % ((top - base) / created, top / 1024, base / 1024,
                                                  created))
    else:
        row("registry RSS per enqueued session", "-")
        reasons.append("registry RSS per enqueued session: no samples during the enqueue")
    for r in api.get("reasons", []):
        reasons.append("api bench: " + r)
    for r in reasons:
        print("reason:", r)
    return 0 if api else 1


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]) or len(sys.argv) < 5:
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    sys.exit(main())
