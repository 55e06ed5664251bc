"""bench/vfolder/bench.py: the measurements of `make bench-vfolder` (run by
run.sh with the stack and nginx up; see README.md). Prints a table.

Environment: STATE (the bench's own files), STACK (the stack's state dir:
env, services; default STATE), NGX_URL, VOLUME and the BENCH_* knobs of
run.sh. Its folder has a name of its own (bench-<hex>) and is purged at the
end, so that it leaves nothing behind on a stack that outlives it."""
import atexit
import hashlib
import io
import os
import shlex
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid
import zipfile

import requests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
import svc_signer  # noqa: E402 - the tests' signer of internal calls

STATE = os.environ["STATE"]
STACK = os.environ.get("STACK", STATE)
NGX = os.environ["NGX_URL"]
VOLUME = os.environ["VOLUME"]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
BIG_MIB = int(os.environ.get("BENCH_BIG_MIB", "1024"))
SMALL_N = int(os.environ.get("BENCH_SMALL_COUNT", "1000"))
SMALL_KIB = int(os.environ.get("BENCH_SMALL_KIB", "64"))


def say(msg):
    print(f"bench-vfolder: {msg}", flush=True)


def env_file():
    env = {}
    for line in open(os.path.join(STACK, "env")):
        w = shlex.split(line, comments=True)
        if w and w[0] == "export":
            for x in w[1:]:
                k, _, v = x.partition("=")
                env[k] = v
    return env


def services():
    out = {}
    for line in open(os.path.join(STACK, "services")):
        p = line.split()
        if len(p) == 3 and p[2].startswith("http"):
            out[p[0]] = p[2]
    return out


ENV = env_file()
URLS = services()
AK = ENV["TESSERA_ADMIN_ACCESS_KEY"]
KEYS = ENV["TESSERA_SERVICE_KEYS_DIR"]  # the internal API is called as the gateway would
UID = svc_signer.call(KEYS, "gateway", "GET", f"{URLS['auth']}/v1/credentials/{AK}", timeout=10).json()["user"]["id"]
H = {"X-Tessera-Caller": UID, "X-Tessera-Caller-Access-Key": AK}


def vf(method, path, body=None):
    r = svc_signer.call(KEYS, "gateway", method, URLS["vfolder"] + "/v1" + path, json=body, headers=H, timeout=60)
    if r.status_code >= 300:
        sys.exit(f"bench-vfolder: {method} {path}: {r.status_code} {r.text}")
    return r.json() if r.content else None


def curl(args, expect_bytes=None):
    """One curl process: (wall-clock seconds, bytes received)."""
    t0 = time.monotonic()
    r = subprocess.run(["curl", "-s", "-S", "-o", "/dev/null", "-w", "%{http_code} %{time_total} %{size_download}\n",
                        *args], capture_output=True, text=True)
    lines = [ln.split() for ln in r.stdout.strip().splitlines()]
    if r.returncode != 0 or not lines or any(ln[0] not in ("200", "204", "206") for ln in lines):
        sys.exit(f"bench-vfolder: curl {args[:3]}...: exit {r.returncode} {r.stdout[-300:]} {r.stderr[-300:]}")
    got = sum(int(float(ln[2])) for ln in lines)
    if expect_bytes is not None and got != expect_bytes:
        sys.exit(f"bench-vfolder: curl got {got} bytes, expected {expect_bytes}")
    return time.monotonic() - t0, got


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def same_bytes(url, path, what):
    """GET url once (outside the timed runs) and exit unless its body is
    byte for byte the file at path."""
    h = hashlib.sha256()
    with requests.get(url, stream=True, timeout=300) as r:
        if r.status_code != 200:
            sys.exit(f"bench-vfolder: {what}: {r.status_code}")
        for chunk in r.iter_content(1 << 20):
            h.update(chunk)
    if h.hexdigest() != sha256_file(path):
        sys.exit(f"bench-vfolder: {what}: the bytes downloaded differ from the file's")


def timed(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-vfolder: {cmd[0]}: exit {r.returncode}: {r.stderr[-400:]}")
    return time.monotonic() - t0, r


# ---- data ----------------------------------------------------------------------------

for _ in range(100):
    try:
        requests.get(NGX + "/", timeout=1)
        break
    except requests.RequestException:
        time.sleep(0.1)
FOLDER = f"bench-{uuid.uuid4().hex[:8]}"
f = vf("POST", "/folders", {"name": FOLDER})
fid = f["id"]


def purge():
    """The folder to the trash and purged (its files with it)."""
    for method, path, body in (("DELETE", f"/folders/{FOLDER}", None), ("POST", "/folders/purge", {"id": fid})):
        r = svc_signer.call(KEYS, "gateway", method, URLS["vfolder"] + "/v1" + path, json=body, headers=H,
                            timeout=60)
        if r.status_code >= 300:
            print(f"bench-vfolder: {method} {path}: {r.status_code} {r.text}", file=sys.stderr)
            return


atexit.register(purge)
rel = f"{fid[:2]}/{fid[2:4]}/{fid}"
fdir = os.path.join(VOLUME, rel)
big = os.path.join(fdir, "big.bin")
say(f"writing {BIG_MIB} MiB and {SMALL_N} x {SMALL_KIB} KiB files into the folder")
subprocess.run(["dd", "if=/dev/urandom", f"of={big}", "bs=1M", f"count={BIG_MIB}", "status=none"], check=True)
os.makedirs(os.path.join(fdir, "small"))
for i in range(SMALL_N):
    with open(os.path.join(fdir, "small", f"f{i:04d}"), "wb") as fh:
        fh.write(os.urandom(SMALL_KIB * 1024))
big_bytes = BIG_MIB * 1024 * 1024
small_bytes = SMALL_N * SMALL_KIB * 1024
results = []


def row(name, tessera, base, base_name, nbytes, target):
    t, b = statistics.median(tessera), statistics.median(base)
    results.append((name, nbytes / t / 2**20, nbytes / b / 2**20, base_name, b / t, target))


# ---- 1 GiB download ---------------------------------------------------------------------

d = vf("POST", f"/folders/{FOLDER}/request-download", {"file": "big.bin"})
vurl = f"{d['url']}?token={urllib.parse.quote(d['token'])}"
curl([vurl], big_bytes)  # warm the page cache for both
same_bytes(vurl, big, "download of big.bin")
same_bytes(f"{NGX}/{rel}/big.bin", big, "nginx's big.bin")
tv, tn = [], []
for i in range(RUNS):
    for who in (("v", "n") if i % 2 == 0 else ("n", "v")):
        if who == "v":
            tv.append(curl([vurl], big_bytes)[0])
        else:
            tn.append(curl([f"{NGX}/{rel}/big.bin"], big_bytes)[0])
say(f"1 GiB download: vfolder {[round(x, 3) for x in tv]} s, nginx {[round(x, 3) for x in tn]} s")
row(f"download {BIG_MIB} MiB file", tv, tn, "nginx", big_bytes, 0.9)

# ---- many small files, one by one --------------------------------------------------------

t0 = time.monotonic()
tokens = []
s = requests.Session()
for i in range(SMALL_N):
    r = svc_signer.call(KEYS, "gateway", "POST", URLS["vfolder"] + f"/v1/folders/{FOLDER}/request-download",
                        json={"file": f"small/f{i:04d}"}, headers=H, timeout=10, session=s)
    tokens.append(r.json())
token_s = time.monotonic() - t0
vcfg, ncfg = os.path.join(STATE, "small-v.curl"), os.path.join(STATE, "small-n.curl")
with open(vcfg, "w") as fh:
    for d in tokens:
        fh.write(f'url = "{d["url"]}?token={urllib.parse.quote(d["token"])}"\noutput = "/dev/null"\n')
with open(ncfg, "w") as fh:
    for i in range(SMALL_N):
        fh.write(f'url = "{NGX}/{rel}/small/f{i:04d}"\noutput = "/dev/null"\n')
tv, tn = [], []
for i in range(RUNS):
    for who in (("v", "n") if i % 2 == 0 else ("n", "v")):
        if who == "v":
            tv.append(curl(["-K", vcfg], small_bytes)[0])
        else:
            tn.append(curl(["-K", ncfg], small_bytes)[0])
say(f"{SMALL_N} small files: vfolder {[round(x, 3) for x in tv]} s, nginx {[round(x, 3) for x in tn]} s; "
    f"issuing the {SMALL_N} tokens took {token_s:.2f} s")
row(f"download {SMALL_N} x {SMALL_KIB} KiB, one by one", tv, tn, "nginx", small_bytes, 0.9)
small_nginx = tn

# ---- many small files, one zip ---------------------------------------------------------------

d = vf("POST", f"/folders/{FOLDER}/request-download", {"file": "small", "archive": True})
zurl = f"{d['url']}?token={urllib.parse.quote(d['token'])}"
# once, outside the timed runs: every file in the zip, byte for byte
zr = requests.get(zurl, timeout=300)
if zr.status_code != 200:
    sys.exit(f"bench-vfolder: the zip: {zr.status_code}")
with zipfile.ZipFile(io.BytesIO(zr.content)) as z:
    names = sorted(n for n in z.namelist() if not n.endswith("/"))
    if len(names) != SMALL_N:
        sys.exit(f"bench-vfolder: the zip has {len(names)} files, not {SMALL_N}")
    for n in names:
        with open(os.path.join(fdir, "small", os.path.basename(n)), "rb") as fh:
            if z.read(n) != fh.read():
                sys.exit(f"bench-vfolder: {n} in the zip differs from the file")
del zr
tz = []
for i in range(RUNS):
    sec, got = curl([zurl])
    if got < small_bytes:
        sys.exit(f"bench-vfolder: the zip has {got} bytes, fewer than the files")
    tz.append(sec)
say(f"{SMALL_N} small files as one zip: {[round(x, 3) for x in tz]} s")
row(f"download {SMALL_N} x {SMALL_KIB} KiB as one zip", tz, small_nginx, "nginx 1 by 1", small_bytes, 0.9)

# ---- 1 GiB upload vs dd -----------------------------------------------------------------------

tu, td = [], []
for i in range(RUNS):
    for who in (("u", "d") if i % 2 == 0 else ("d", "u")):
        if who == "u":
            up = vf("POST", f"/folders/{FOLDER}/request-upload", {"path": f"up{i}.bin", "size": big_bytes})
            sec, _ = curl(["-X", "PATCH", "-T", big, "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0",
                           "-H", "Content-Type: application/offset+octet-stream", "-H", "Expect:",
                           f"{up['url']}?token={urllib.parse.quote(up['token'])}"])
            if os.path.getsize(os.path.join(fdir, f"up{i}.bin")) != big_bytes:
                sys.exit("bench-vfolder: the uploaded file has the wrong size")
            if i == 0 and sha256_file(os.path.join(fdir, "up0.bin")) != sha256_file(big):
                sys.exit("bench-vfolder: the uploaded file's bytes differ from the original's")
            tu.append(sec)
            vf("DELETE", f"/folders/{FOLDER}/delete_files", {"files": [f"up{i}.bin"]})
        else:
            target = os.path.join(VOLUME, f"dd{i}.bin")
            sec, _ = timed(["dd", f"if={big}", f"of={target}", "bs=1M", "conv=fsync", "status=none"])
            td.append(sec)
            os.unlink(target)
say(f"1 GiB upload: tus {[round(x, 3) for x in tu]} s, dd {[round(x, 3) for x in td]} s")
row(f"upload {BIG_MIB} MiB (tus PATCH, fsync)", tu, td, "dd conv=fsync", big_bytes, 0.8)

# ---- the table ------------------------------------------------------------------------------------

print()
print(f"{'what':<44} {'tessera MiB/s':>14} {'baseline MiB/s':>15} {'baseline':<14} {'ratio':>6} {'target':>7}  ok")
fails = 0
for name, t, b, bn, ratio, target in results:
    good = ratio >= target
    fails += 0 if good else 1
    print(f"{name:<44} {t:>14.0f} {b:>15.0f} {bn:<14} {ratio:>6.2f} {'>=' + str(target):>7}  {'yes' if good else 'NO'}")
print(f"\nmedian of {RUNS} runs each (wall clock of one curl or dd process); {os.cpu_count()} CPUs; token issuing for {SMALL_N} files: {token_s:.2f} s "
      "(not in the one-by-one figure)")
sys.exit(0)
