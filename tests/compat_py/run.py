#!/usr/bin/python3
"""run.py: Backend.AI's Python client (release 24.09.14: the `backend.ai`
CLI and its SDK, unchanged) against a Tessera stack, command by command,
each outcome compared with expected.txt (README.md beside this file).

    . <state>/env && /usr/bin/python3 tests/compat_py/run.py [--only REGEX]
        [--mode api|session] [--record] [--json FILE] [--client DIR]

The stack's env file gives the gateway, the bootstrap superadmin's keys and
password, the demo image. The client is $BAI_PY_CLIENT, --client, or
../shared/clients/backend.ai-python-24.09 beside the repository. Runs every
case in API mode (signed with the keypair) and then in session mode (logged
in through /server/login), prints a table and

    compat-py: N/T ok, M expected failures (listed), K unexpected

and exits 1 when anything is unexpected: a case listed `ok` that fails, one
listed as failing that works or fails another way, a case missing from
expected.txt or a line there without a case, a command of the CLI no case
calls. --record rewrites expected.txt from this run (keeping reasons)."""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
EXPECTED = os.path.join(HERE, "expected.txt")
STATUSES = ("ok", "refused", "crash")


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="run the cases whose name matches this regex")
    ap.add_argument("--mode", choices=("api", "session"), help="one endpoint type only")
    ap.add_argument("--record", action="store_true", help="rewrite expected.txt from this run")
    ap.add_argument("--json", help="write the results as JSON to this file")
    ap.add_argument("--client", help="the client's directory (lib/, deps/, stubs/)")
    ap.add_argument("--expected", default=EXPECTED)
    return ap.parse_args()


def client_dir(args):
    d = args.client or os.environ.get("BAI_PY_CLIENT") or \
        os.path.join(REPO, "..", "shared", "clients", "backend.ai-python-24.09")
    return os.path.abspath(d)


# ---- expected.txt ---------------------------------------------------------------------------

def read_expected(path):
    """{name: (status, reason)} and the header comment lines."""
    out, header = {}, []
    if not os.path.exists(path):
        return out, header
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                if not out:
                    header.append(line)
                continue
            name, _, rest = line.partition(" | ")
            status, _, reason = rest.partition(":")
            out[name.strip()] = (status.strip(), reason.strip())
    return out, header


def write_expected(path, header, results, old):
    lines = list(header) or ["# expected.txt"]
    w = max(len(r["name"]) for r in results)
    for r in results:
        status, reason = r["got"], ""
        if status != "ok":
            prev = old.get(r["name"])
            if prev and prev[0] == status and prev[1]:
                reason = prev[1]
            else:
                reason = r["detail"][:160]
        line = f"{r['name'].ljust(w)} | {status}"
        lines.append(line + (f": {reason}" if reason else ""))
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")


# ---- the run --------------------------------------------------------------------------------

def main():
    args = parse_args()
    cdir = client_dir(args)
    if not os.path.isdir(os.path.join(cdir, "lib", "ai", "backend", "client")):
        print(f"compat-py: Backend.AI's Python client is not at {cdir}: skipped", file=sys.stderr)
        return 77
    for k in ("TESSERA_GATEWAY_URL", "TESSERA_ADMIN_ACCESS_KEY", "TESSERA_ADMIN_SECRET_KEY"):
        if not os.environ.get(k):
            print(f"compat-py: {k} is not set: source the stack's env file", file=sys.stderr)
            return 2
    tmp = tempfile.mkdtemp(prefix="tessera-compat-py-")
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    os.environ["HOME"] = home  # the client keeps its cookie and state under it
    os.environ.pop("XDG_STATE_HOME", None)
    os.environ.pop("XDG_CONFIG_HOME", None)
    os.chdir(tmp)
    paths = [os.path.join(cdir, p) for p in ("lib", "deps", "stubs")]
    sys.path[:0] = paths
    # the commands that run the client again in a child process (ssh, scp)
    os.environ["PYTHONPATH"] = os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    import getpass  # noqa: E402
    # `backend.ai login` asks with getpass, which reads the terminal: here the
    # runner's input instead (the only change to how the client runs)
    getpass.getpass = lambda prompt="Password: ", stream=None: input(prompt)
    import cases  # noqa: E402  (imports the client)
    from lib import Outcome  # noqa: E402
    ctx = cases.Ctx(os.environ, tmp, paths)
    expected, header = read_expected(args.expected)
    results = []
    only = re.compile(args.only) if args.only else None
    modes = [args.mode] if args.mode else ["api", "session"]
    t_start = time.monotonic()
    try:
        ctx.setup()
        for mode in modes:
            ctx.use_mode(mode)
            for c in cases.CASES:
                if mode not in c.modes:
                    continue
                name = f"{mode}: {c.name}"
                if only and not only.search(name):
                    continue
                t0 = time.monotonic()
                got, detail = "ok", c.note or ""
                try:
                    note = c.fn(ctx)
                    if isinstance(note, str):
                        detail = note
                except Outcome as o:
                    got, detail = o.kind, o.detail
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # the client's own (CancelledError), or the case's

                    tb = traceback.format_exc().strip().splitlines()
                    got, detail = "crash", f"{type(e).__name__}: {e} | " + (tb[-3].strip() if len(tb) > 2 else "")
                finally:
                    ctx.restore_identity()
                el = time.monotonic() - t0
                results.append({"name": name, "got": got, "detail": " ".join(str(detail).split()),
                                "seconds": round(el, 2)})
                print(f"compat-py: {name}: {got} ({el:.1f}s)", file=sys.stderr, flush=True)
    finally:
        ctx.teardown()
        shutil.rmtree(tmp, ignore_errors=True)
    untested = [] if (only or args.mode) else cases.untested_commands()
    return report(args, results, expected, header, untested, time.monotonic() - t_start)


def classify(results, expected, only):
    names = {r["name"] for r in results}
    for r in results:
        e = expected.get(r["name"])
        r["expected"] = e[0] if e else "(none)"
        r["unexpected"] = None
        if not e:
            r["unexpected"] = "not in expected.txt: add it"
        elif e[0] == "ok" and r["got"] != "ok":
            r["unexpected"] = "expected ok"
        elif e[0] != "ok" and r["got"] == "ok":
            r["unexpected"] = "works now: mark it ok in expected.txt"
        elif e[0] == "refused" and r["got"] == "crash":
            r["unexpected"] = "crashed: expected a clear refusal"
        elif e[0] == "crash" and r["got"] == "refused":
            r["unexpected"] = "a clear refusal now: mark it refused"
        elif e[0] not in STATUSES:
            r["unexpected"] = f"unknown status {e[0]!r} in expected.txt"
    stale = [] if only else [n for n in expected if n not in names]
    return stale


def report(args, results, expected, header, untested, seconds):
    only = args.only or args.mode
    stale = classify(results, expected, only)
    w = max([len(r["name"]) for r in results] + [4])
    out = [f"{'case'.ljust(w)}  {'expected'.ljust(10)}  {'got'.ljust(7)}  detail"]
    for r in results:
        got = r["got"].upper() if r["unexpected"] else r["got"]
        mark = f"UNEXPECTED ({r['unexpected']}): " if r["unexpected"] else ""
        detail = (mark + r["detail"])[:150]
        out.append(f"{r['name'].ljust(w)}  {r['expected'].ljust(10)}  {got.ljust(7)}  {detail}")
    print("\n".join(out))
    bad = [r for r in results if r["unexpected"]]
    if bad or stale or untested:
        print("\nunexpected:")
        for r in bad:
            print(f"  {r['name']}: {r['unexpected']}; got {r['got']}: {r['detail'][:300]}")
        for s in stale:
            print(f"  {s}: listed in expected.txt but no case has that name")
        for u in untested:
            print(f"  {u}: a command of the CLI that no case calls")
    ok = sum(1 for r in results if r["got"] == "ok")
    listed = sum(1 for r in results if r["got"] != "ok" and r["expected"] != "ok" and not r["unexpected"])
    by = {}
    for r in results:
        if r["got"] != "ok" and not r["unexpected"]:
            by[r["expected"]] = by.get(r["expected"], 0) + 1
    kinds = ", ".join(f"{v} {k}" for k, v in sorted(by.items()))
    unexpected = len(bad) + len(stale) + len(untested)
    print(f"\ncompat-py: {ok}/{len(results)} ok, {listed} expected failures"
          f"{' (' + kinds + ')' if kinds else ''}, {unexpected} unexpected ({seconds:.0f} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"results": results, "stale": stale, "untested": untested}, f, indent=1)
    if args.record:
        if only:
            print("compat-py: --record with --only or --mode would drop the other cases: not written",
                  file=sys.stderr)
        else:
            write_expected(args.expected, header, results, expected)
            print(f"compat-py: wrote {args.expected}")
            return 0
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    sys.exit(main())
