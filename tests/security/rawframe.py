#!/usr/bin/env python3
"""rawframe.py: hand-built Ethernet frames from inside a kernel's network
namespace (run with `nsenter --net=/run/netns/tessera-<kernel id>` by the
security suite: a tenant who got CAP_NET_RAW, the worst case). Each frame goes
to the bridge gateway's MAC with an IPv4 destination of our choosing (above
all 127.0.0.1, which the host drops as a martian unless route_localnet is on
for the bridge), and an AF_PACKET socket on the same interface watches for an
answer.

  rawframe.py --ifname eth0 --src-mac M --src-ip A --dst-mac M [--gateway G]
              [--tcp DST:PORT ...] [--icmp DST ...] [--timeout S]
  rawframe.py --ping DST ... [--timeout S]
      ICMP echo through a raw IP socket of the namespace (the kernel routes
      it and resolves the neighbour): {"ping DST": {"answer": ...}}

Prints JSON {"tcp DST:PORT": {"answer": "syn-ack"|"rst"|null, ...},
"icmp DST": {"answer": "echo-reply"|null, ...}, "sent": N, "icmp_errors": [...]}.
Only the standard library.
"""
import argparse
import json
import os
import random
import select
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800
ETH_P_ARP = 0x0806
ETH_P_ALL = 0x0003


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ip_header(src, dst, proto, payload_len, ident):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + payload_len, ident, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:]


def tcp_syn(src, dst, sport, dport, seq):
    hdr = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(hdr))
    return hdr[:16] + struct.pack("!H", csum(pseudo + hdr)) + hdr[18:]


def icmp_echo(ident, seq):
    body = b"tessera-rawframe"
    h = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + body
    return h[:2] + struct.pack("!H", csum(h)) + h[4:]


def ping(dsts, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    results = {}
    for i, dst in enumerate(dsts):
        results[f"ping {dst}"] = {"answer": None}
        try:
            s.sendto(icmp_echo(ident, i + 1), (dst, 0))
        except OSError as e:
            results[f"ping {dst}"]["error"] = str(e)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            continue
        pkt, (src, _) = s.recvfrom(65535)
        l4 = pkt[(pkt[0] & 0x0F) * 4:]
        if len(l4) < 8:
            continue
        typ, _code, _, rid, rseq = struct.unpack("!BBHHH", l4[:8])
        if typ == 0 and rid == ident and 1 <= rseq <= len(dsts) and dsts[rseq - 1] == src:
            results[f"ping {src}"]["answer"] = "echo-reply"
    json.dump(results, sys.stdout)
    print()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ping", action="append", default=[])
    p.add_argument("--ifname")
    p.add_argument("--src-mac")
    p.add_argument("--src-ip")
    p.add_argument("--dst-mac")
    p.add_argument("--tcp", action="append", default=[])
    p.add_argument("--icmp", action="append", default=[])
    p.add_argument("--gateway", help="the gateway's address: a normal packet to it first, so that "
                                     "the host has our MAC in its neighbour table")
    p.add_argument("--timeout", type=float, default=2.0)
    a = p.parse_args()
    if a.ping:
        ping(a.ping, a.timeout)
        return
    if not (a.ifname and a.src_mac and a.src_ip and a.dst_mac):
        p.error("--ifname, --src-mac, --src-ip and --dst-mac are needed for frames")

    if a.gateway:
        w = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            w.sendto(b"warm-up", (a.gateway, 9))
        except OSError:
            pass
        w.close()
        time.sleep(0.2)

    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniff.bind((a.ifname, 0))
    send = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    send.bind((a.ifname, 0))
    eth = mac(a.dst_mac) + mac(a.src_mac) + struct.pack("!H", ETH_P_IP)

    results = {}
    by_tcp = {}   # (dst, dport, sport) -> key
    by_icmp = {}  # (dst, seq) -> key
    ident = os.getpid() & 0xFFFF
    sent = 0
    for i, t in enumerate(a.tcp):
        dst, port = t.rsplit(":", 1)
        sport = random.randint(33000, 60000)
        seg = tcp_syn(a.src_ip, dst, sport, int(port), random.getrandbits(32))
        key = f"tcp {dst}:{port}"
        results[key] = {"answer": None, "sport": sport}
        by_tcp[(dst, int(port), sport)] = key
        send.send(eth + ip_header(a.src_ip, dst, 6, len(seg), (ident + i) & 0xFFFF) + seg)
        sent += 1
    for i, dst in enumerate(a.icmp):
        seq = i + 1
        msg = icmp_echo(ident, seq)
        key = f"icmp {dst}"
        results[key] = {"answer": None}
        by_icmp[(dst, seq)] = key
        send.send(eth + ip_header(a.src_ip, dst, 1, len(msg), (ident + 1000 + i) & 0xFFFF) + msg)
        sent += 1

    icmp_errors = []
    deadline = time.monotonic() + a.timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([sniff], [], [], left)
        if not r:
            continue
        frame, addr = sniff.recvfrom(65535)
        if os.environ.get("RAWFRAME_DEBUG"):
            print(addr, frame[:60].hex(), file=sys.stderr)
        if addr[2] == socket.PACKET_OUTGOING or len(frame) < 34:
            continue
        ethertype = struct.unpack("!H", frame[12:14])[0]
        if ethertype == ETH_P_ARP and len(frame) >= 42 and frame[20:22] == b"\x00\x01" \
                and socket.inet_ntoa(frame[38:42]) == a.src_ip:
            # Answer "who has <our address>" ourselves: the host asks with the
            # reply's source address (127.0.0.1 here), which a normal stack
            # ignores; a tenant with a raw socket answers it.
            arp = struct.pack("!HHBBH", 1, ETH_P_IP, 6, 4, 2) + mac(a.src_mac) + \
                socket.inet_aton(a.src_ip) + frame[22:28] + frame[28:32]
            send_arp = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
            send_arp.bind((a.ifname, 0))
            send_arp.send(frame[6:12] + mac(a.src_mac) + struct.pack("!H", ETH_P_ARP) + arp)
            send_arp.close()
            continue
        if ethertype != ETH_P_IP:
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        proto = ip[9]
        src = socket.inet_ntoa(ip[12:16])
        dstip = socket.inet_ntoa(ip[16:20])
        if dstip != a.src_ip:
            continue
        l4 = ip[ihl:]
        if proto == 6 and len(l4) >= 14:
            sport, dport = struct.unpack("!HH", l4[:4])
            flags = l4[13]
            key = by_tcp.get((src, sport, dport))
            if key and results[key]["answer"] is None:
                results[key]["answer"] = "syn-ack" if flags & 0x12 == 0x12 else "rst" if flags & 0x04 else f"flags {flags:#x}"
                results[key]["from"] = src
        elif proto == 1 and len(l4) >= 8:
            typ, code, _, rid, rseq = struct.unpack("!BBHHH", l4[:8])
            if typ == 0 and rid == ident:
                key = by_icmp.get((src, rseq))
                if key:
                    results[key]["answer"] = "echo-reply"
                    results[key]["from"] = src
            elif typ in (3, 11, 12):
                icmp_errors.append({"from": src, "type": typ, "code": code})
    results["sent"] = sent
    results["icmp_errors"] = icmp_errors
    json.dump(results, sys.stdout)
    print()


if __name__ == "__main__":
    main()
