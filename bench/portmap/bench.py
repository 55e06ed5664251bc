#!/usr/bin/env python3
"""bench/portmap/bench.py: CNI ADD and DEL wall time of tessera-portmap beside
Debian's portmap (/usr/lib/cni/portmap, containernetworking-plugins), on the
same input, in the same run (`make bench-portmap`; figures in docs/agent.md,
"Networking"). Needs root.

Sets up what the agent does for one kernel: a network namespace attached by
Debian's bridge plugin to a bridge of its own (tstpmb0, 10.231.188.0/24,
host-local IPAM in a temporary directory); then, alternating the two plugins
so that both see the same load, BENCH_RUNS (20) times each: ADD with the
agent's configuration (cniVersion 1.0.0, snat, BENCH_PORTS (1) port mappings,
the bridge result as prevResult), then DEL. Each is timed from the plugin's
exec to its exit (Python's subprocess, the same for both). Two warm-up rounds
are not counted. Prints median, p90 and max per plugin and command. Removes
the namespace, the bridge and every rule it made, also on failure.

Usage: bench.py PATH-OF-tessera-portmap
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CNI_DIR = "/usr/lib/cni"
NET, BRIDGE, SUBNET = "tstpmb", "tstpmb0", "10.231.188.0/24"
CID = "tstpm-bench"
NS = "tstpm-bench"
HOST_PORT = 39950


def plugin_run(path, cmd, conf, netns):
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "CNI_COMMAND": cmd,
           "CNI_CONTAINERID": CID, "CNI_NETNS": netns, "CNI_IFNAME": "eth0", "CNI_PATH": CNI_DIR}
    t0 = time.perf_counter()
    r = subprocess.run([path], input=json.dumps(conf), env=env, capture_output=True, text=True,
                       timeout=60)
    ms = (time.perf_counter() - t0) * 1000
    if r.returncode != 0:
        raise RuntimeError(f"{os.path.basename(path)} {cmd}: {r.stdout} {r.stderr}")
    return ms, r.stdout


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ours = os.path.abspath(sys.argv[1])
    debian = os.path.join(CNI_DIR, "portmap")
    if os.geteuid() != 0:
        sys.exit("bench-portmap: needs root (iptables, network namespaces)")
    for p in (ours, debian, os.path.join(CNI_DIR, "bridge")):
        if not os.access(p, os.X_OK):
            sys.exit(f"bench-portmap: {p} is not there")
    runs = int(os.environ.get("BENCH_RUNS", "20"))
    n_ports = int(os.environ.get("BENCH_PORTS", "1"))
    tmp = tempfile.mkdtemp(prefix="tstpm-bench-")
    netns = f"/run/netns/{NS}"
    bridge = {"cniVersion": "1.0.0", "name": NET, "type": "bridge", "bridge": BRIDGE,
              "isGateway": True, "ipMasq": False, "hairpinMode": True,
              "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
                       "routes": [{"dst": "0.0.0.0/0"}], "dataDir": tmp}}
    prev = None
    plugins = {"tessera-portmap": ours, "portmap (Debian)": debian}
    times = {(name, cmd): [] for name in plugins for cmd in ("ADD", "DEL")}
    try:
        subprocess.run(["ip", "netns", "add", NS], check=True)
        _, out = plugin_run(os.path.join(CNI_DIR, "bridge"), "ADD", bridge, netns)
        prev = json.loads(out)
        maps = [{"hostPort": HOST_PORT + i, "containerPort": 7681 + i, "protocol": "tcp"}
                for i in range(n_ports)]
        for i in range(runs + 2):
            for name, path in plugins.items():
                conf = {"cniVersion": "1.0.0", "name": NET, "type": os.path.basename(path),
                        "capabilities": {"portMappings": True}, "snat": True,
                        "runtimeConfig": {"portMappings": maps}, "prevResult": prev}
                for cmd in ("ADD", "DEL"):
                    ms, _ = plugin_run(path, cmd, conf, netns)
                    if i >= 2:
                        times[(name, cmd)].append(ms)
    finally:
        for path in plugins.values():  # nothing left, also after a failure
            try:
                plugin_run(path, "DEL", {"cniVersion": "1.0.0", "name": NET,
                                         "type": os.path.basename(path),
                                         "runtimeConfig": {"portMappings": []}}, netns)
            except (RuntimeError, subprocess.SubprocessError):
                pass
        if prev:
            plugin_run(os.path.join(CNI_DIR, "bridge"), "DEL", dict(bridge, prevResult=prev), netns)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"CNI port plugin, {n_ports} port mapping(s), {runs} runs each "
          f"({subprocess.run(['iptables', '--version'], capture_output=True, text=True).stdout.strip()}):")
    print(f"  {'plugin':18} {'cmd':4} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
    for (name, cmd), v in times.items():
        v.sort()
        print(f"  {name:18} {cmd:4} {statistics.median(v):10.1f} {v[(len(v) * 9) // 10]:8.1f} "
              f"{v[-1]:8.1f}")
    for cmd in ("ADD", "DEL"):
        a = statistics.median(times[("tessera-portmap", cmd)])
        b = statistics.median(times[("portmap (Debian)", cmd)])
        print(f"  {cmd}: tessera-portmap {a:.1f} ms vs portmap {b:.1f} ms ({b / a:.1f}x)")


if __name__ == "__main__":
    main()
