/* test_netfilter_host.c: the agent's iptables rules for a CNI network on
 * the host (netfilter.c, cni.c), as root, with the real plugins
 * (tessera-bridge, tessera-portmap) through cni_add / cni_del on a bridge of
 * the test's own (tstnf0, 10.231.190.0/24), namespaces standing in for
 * kernels, servers in them and on the host: kernels of two sessions cannot
 * reach each other (TCP, UDP, ICMP), two of one session can; a kernel
 * reaches no listener on the host (127.0.0.1, also with a raw frame to the
 * gateway's MAC; the bridge address; another address of the host); a forged
 * source address or MAC gets nowhere; the published port answers on the
 * published address and not from a kernel of another session;
 * 169.254.0.0/16 is dropped; a kernel attached by Debian's bridge plugin
 * gets the same isolation; the rules are back after they were flushed and
 * the agent set the network up again (its restart), also for a kernel known
 * only from its state.json (an agent from before the records); DEL and the
 * network's removal leave no rule, chain or record; eight kernels added and
 * deleted at once each get their rules exactly once. The rules as text:
 * test_netfilter_plan.c. */
#include "services/agent/cni.h"
#include "services/agent/netfilter.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/unit/agent/shell_util.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libcommon/proc.h"

/* ---- as root: kernels on a bridge of the test's own ---------------------------------- */

#define NET "tstnf0"
#define SUBNET "10.231.190.0/24"
#define GATEWAY "10.231.190.1"
#define HOST_PORT 39993 /* a listener of the host's, on every address */
#define PUB_A 39990     /* a1's published port (its 8080) */
#define PUB_B 39991     /* b1's */

static const char *g_skip;
static char g_tmp[128];
static char *g_bridge, *g_portmap;
static cni_conf g_conf;
static char g_other[64]; /* an address of the host not on the bridge, or "" */
static pid_t g_host_server;

typedef struct box {
    char id[64], netns[160], ns[128], ip[64], session[16];
    char *result;
    pid_t server;
    kernel_ports port;
    int n_ports;
} box;
static box g_a1, g_a2, g_b1, g_b2, g_c1;

/* TCP on one port (answers "tcp <name> from <peer>"), UDP on the next
 * ("udp <name>"); "ready" once listening. */
static const char SERVER[] =
    "import socket, sys, threading\n"
    "name, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
    "t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "t.bind((host, port)); t.listen(64)\n"
    "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((host, port + 1))\n"
    "def udp():\n"
    "    while True:\n"
    "        data, peer = u.recvfrom(100); u.sendto(('udp ' + name).encode(), peer)\n"
    "threading.Thread(target=udp, daemon=True).start()\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    c, peer = t.accept(); c.sendall(('tcp %s from %s' % (name, peer[0])).encode()); "
    "c.close()\n";

/* tcp|udp|icmp host [port]: "ok <answer>" or "fail ...". raw dst port
 * gw_mac src_ip: a TCP SYN in an Ethernet frame of our own to gw_mac (so the
 * routing decision is the host's), "answered" when its SYN-ACK comes back
 * (a fresh source port and sequence number: the host retransmits SYN-ACKs
 * of an earlier probe, which the namespace drops as martians unanswered). */
static const char PROBE[] =
    "import random, socket, struct, sys, time\n"
    "mode, a = sys.argv[1], sys.argv[2:]\n"
    "def csum(b):\n"
    "    if len(b) % 2: b += b'\\0'\n"
    "    s = sum(struct.unpack('!%dH' % (len(b) // 2), b)); s = (s >> 16) + (s & 0xffff)\n"
    "    return ~(s + (s >> 16)) & 0xffff\n"
    "try:\n"
    "    if mode == 'tcp':\n"
    "        s = socket.create_connection((a[0], int(a[1])), timeout=1); s.settimeout(1)\n"
    "        print('ok ' + s.recv(100).decode())\n"
    "    elif mode == 'udp':\n"
    "        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)\n"
    "        s.sendto(b'hi', (a[0], int(a[1]))); print('ok ' + s.recv(100).decode())\n"
    "    elif mode == 'icmp':\n"
    "        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\n"
    "        s.settimeout(1); body = struct.pack('!HH', 0x7e55, 1) + b'tessera'\n"
    "        s.sendto(struct.pack('!BBH', 8, 0, csum(b'\\x08\\0\\0\\0' + body)) + body, (a[0], "
    "0))\n"
    "        end = time.time() + 1\n"
    "        while time.time() < end:\n"
    "            d, peer = s.recvfrom(200)\n"
    "            if peer[0] == a[0] and d[20] == 0: print('ok'); break\n"
    "        else: print('fail no reply')\n"
    "    elif mode == 'raw':\n"
    "        dst, port, gw, src = a[0], int(a[1]), bytes.fromhex(a[2].replace(':', '')), a[3]\n"
    "        me = bytes.fromhex(open('/sys/class/net/eth0/address').read().strip()"
    ".replace(':', ''))\n"
    "        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))\n"
    "        s.bind(('eth0', 0)); s.settimeout(0.3)\n"
    "        sip, dip = socket.inet_aton(src), socket.inet_aton(dst)\n"
    "        sport, seq = random.randint(20000, 60000), random.randint(1, 1 << 30)\n"
    "        tcp = struct.pack('!HHIIBBHHH', sport, port, seq, 0, 5 << 4, 0x02, 64240, 0, 0)\n"
    "        c = csum(sip + dip + struct.pack('!BBH', 0, 6, len(tcp)) + tcp)\n"
    "        tcp = tcp[:16] + struct.pack('!H', c) + tcp[18:]\n"
    "        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, sip, dip)\n"
    "        ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]\n"
    "        frame = gw + me + b'\\x08\\x00' + ip + tcp\n"
    "        end, got = time.time() + 1.2, False\n"
    "        while time.time() < end and not got:\n"
    "            s.send(frame)\n"
    "            t2 = time.time() + 0.4\n"
    "            while time.time() < t2 and not got:\n"
    "                try: d = s.recv(2000)\n"
    "                except OSError: continue\n"
    "                h = d[14:]\n"
    "                if len(h) >= 40 and h[9] == 6 and h[12:16] == dip:\n"
    "                    sp, dp, _, ack = struct.unpack('!HHII', h[20:32])\n"
    "                    got = (sp, dp, ack) == (port, sport, seq + 1) and h[33] & 0x12 == 0x12\n"
    "        print('answered' if got else 'silent')\n"
    "except OSError as e:\n"
    "    print('fail %s' % e)\n";

/* Start argv with its stdout on a pipe; wait for its first line ("ready"). */
static pid_t start_server(const char *const argv[])
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setpgid(0, 0);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    char line[64] = "";
    FILE *f = fdopen(fds[0], "r");
    if (!fgets(line, sizeof(line), f) || strncmp(line, "ready", 5) != 0) {
        fclose(f);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    fclose(f); /* the server writes nothing more */
    return pid;
}

static void stop(pid_t *pid)
{
    if (*pid > 0) {
        kill(*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
    }
    *pid = 0;
}

/* The probe run in b's namespace ("" for the host's). */
static char *probe(const box *b, const char *args)
{
    if (!b) return out_of("python3 -c \"$TSTNF_PROBE\" %s 2>&1", args);
    return out_of("ip netns exec %s python3 -c \"$TSTNF_PROBE\" %s 2>&1", b->ns, args);
}

/* The probe with the arguments fmt makes, in b, answers what starts with want. */
static void reaches(const box *b, const char *want, const char *fmt, ...) TS_PRINTF(3, 4);
static void reaches(const box *b, const char *want, const char *fmt, ...)
{
    char args[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    char *got = probe(b, args);
    if (strncmp(got, want, strlen(want)) != 0)
        fail_msg("%s %s: '%s', want '%s'", b ? b->id : "host", args, got, want);
    free(got);
}

/* What runtime_start records before the ADD, and the ADD's result after it. */
static void write_state(const box *b)
{
    char path[400];
    snprintf(path, sizeof(path), "%s/kernels/%s", g_tmp, b->id);
    mkdir(path, 0700);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), "/state.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"kernel_id\":\"%s\",\"session_id\":\"%s\"%s%s}", b->id, b->session,
            b->result ? ",\"cni_result\":" : "", b->result ? b->result : "");
    fclose(f);
}

static void box_add(box *b, const char *name, const char *session, int pub)
{
    snprintf(b->id, sizeof(b->id), "tstnf-%d-%s", (int)getpid(), name);
    snprintf(b->session, sizeof(b->session), "%s", session);
    cni_netns_path(b->id, b->netns, sizeof(b->netns));
    snprintf(b->ns, sizeof(b->ns), "%s", strrchr(b->netns, '/') + 1);
    b->port = (kernel_ports){.container_port = 8080, .host_port = pub};
    b->n_ports = pub ? 1 : 0;
    write_state(b);
    ts_err err = {{0}};
    assert_true(cni_netns_create(b->netns, &err));
    if (!cni_add(&g_conf, b->id, *b->session ? b->session : NULL, b->netns, &b->port, b->n_ports,
                 &b->result, b->ip, sizeof(b->ip), &err))
        fail_msg("cni_add %s: %s", b->id, err.msg);
    write_state(b);
    const char *argv[] = {"ip",   "netns", "exec",    b->ns,  "python3", "-c",
                          SERVER, name,    "0.0.0.0", "8080", NULL};
    b->server = start_server(argv);
    assert_true(b->server > 0);
}

static void box_del(box *b)
{
    stop(&b->server);
    if (b->result) {
        ts_err err = {{0}};
        if (!cni_del(&g_conf, b->id, b->netns, &b->port, b->n_ports, b->result, NULL, NULL, &err))
            fail_msg("cni_del %s: %s", b->id, err.msg);
        free(b->result);
        b->result = NULL;
    }
    ts_err err = {{0}};
    if (b->netns[0] && !cni_netns_delete(b->netns, &err)) fprintf(stderr, "%s\n", err.msg);
}

/* Lines of iptables-save that are this network's. */
static int our_lines(void)
{
    char *n = out_of("iptables-save | grep -c -e '-" NET "' -e 'tessera:" NET "'");
    int v = atoi(n);
    free(n);
    return v;
}

static const char *why_skip(void)
{
    if (geteuid() != 0) return "not root";
    if (sh("command -v iptables-restore >/dev/null && command -v python3 >/dev/null") != 0)
        return "no iptables-restore or python3";
    g_bridge = proc_sibling_path("../../bin/tessera-bridge", NULL);
    if (!g_bridge || access(g_bridge, X_OK) != 0) return "no ../../bin/tessera-bridge (make)";
    g_portmap = proc_sibling_path("../../bin/tessera-portmap", NULL);
    if (!g_portmap || access(g_portmap, X_OK) != 0) return "no ../../bin/tessera-portmap (make)";
    if (sh("ip link show " NET " >/dev/null 2>&1") == 0) return "link " NET " exists already";
    return NULL;
}

static int root_setup(void **state)
{
    (void)state;
    g_skip = why_skip();
    if (g_skip) {
        fprintf(stderr, "test_netfilter_host: root tests skipped: %s\n", g_skip);
        return 0;
    }
    setenv("TSTNF_PROBE", PROBE, 1);
    snprintf(g_tmp, sizeof(g_tmp), "/var/tmp/tessera-nf-XXXXXX");
    if (!mkdtemp(g_tmp)) return -1;
    char path[200];
    snprintf(path, sizeof(path), "%s/kernels", g_tmp);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/cni", g_tmp);
    mkdir(path, 0700);
    static char data[200];
    snprintf(data, sizeof(data), "%s/cni", g_tmp);
    g_conf = (cni_conf){.bin_dir = "/usr/lib/cni",
                        .network = NET,
                        .subnet = SUBNET,
                        .data_dir = data,
                        .portmap = g_portmap,
                        .bridge = g_bridge};
    cni_policy pol = {.state_dir = g_tmp,
                      .kernel_host = "127.0.0.1",
                      .publish_addrs = "",
                      .publish_from = "",
                      .host_ports = "",
                      .deny = "169.254.0.0/16",
                      .outbound = "nat"};
    ts_err err = {{0}};
    if (!cni_policy_set(&pol, &err)) return -1;
    char *other = out_of("ip -4 -o addr show scope global | awk '$2 != \"" NET
                         "\" {split($4, a, \"/\"); print a[1]; exit}'");
    snprintf(g_other, sizeof(g_other), "%s", other);
    free(other);
    char port[16];
    snprintf(port, sizeof(port), "%d", HOST_PORT);
    const char *argv[] = {"python3", "-c", SERVER, "host", "0.0.0.0", port, NULL};
    g_host_server = start_server(argv);
    return g_host_server > 0 ? 0 : -1;
}

static int root_teardown(void **state)
{
    (void)state;
    if (g_skip) return 0;
    box_del(&g_a1);
    box_del(&g_a2);
    box_del(&g_b1);
    box_del(&g_b2);
    box_del(&g_c1);
    stop(&g_host_server);
    sh("ip link del " NET " 2>/dev/null");
    cni_masq_remove(NET, SUBNET);
    sh("rm -rf %s", g_tmp);
    free(g_bridge);
    free(g_portmap);
    return 0;
}

#define SKIP_IF_UNAVAILABLE()                                                                      \
    do {                                                                                           \
        if (g_skip) {                                                                              \
            fprintf(stderr, "skipped: %s\n", g_skip);                                              \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static void check_sessions(void)
{
    /* one session: TCP, UDP, ICMP */
    reaches(&g_a1, "ok tcp a2 from ", "tcp %s 8080", g_a2.ip);
    reaches(&g_a1, "ok udp a2", "udp %s 8081", g_a2.ip);
    reaches(&g_a1, "ok", "icmp %s", g_a2.ip);
    reaches(&g_a2, "ok tcp a1 from ", "tcp %s 8080", g_a1.ip);
    /* two sessions: nothing, either way */
    reaches(&g_a1, "fail", "tcp %s 8080", g_b1.ip);
    reaches(&g_a1, "fail", "udp %s 8081", g_b1.ip);
    reaches(&g_a1, "fail", "icmp %s", g_b1.ip);
    reaches(&g_b1, "fail", "tcp %s 8080", g_a1.ip);
    reaches(&g_b1, "fail", "icmp %s", g_a2.ip);
}

static void check_host_closed(const char *gw_mac)
{
    reaches(&g_a1, "fail", "tcp %s %d", GATEWAY, HOST_PORT);
    reaches(&g_a1, "fail", "icmp %s", GATEWAY);
    if (g_other[0]) {
        reaches(&g_a1, "fail", "tcp %s %d", g_other, HOST_PORT);
    }
    /* 127.0.0.1 in a frame of its own to the gateway's MAC */
    reaches(&g_a1, "silent", "raw 127.0.0.1 %d %s %s", HOST_PORT, gw_mac, g_a1.ip);
    /* ... also to a published port (of its own session's or another's) */
    reaches(&g_a1, "silent", "raw 127.0.0.1 %d %s %s", PUB_B, gw_mac, g_a1.ip);
    reaches(&g_a2, "silent", "raw 127.0.0.1 %d %s %s", PUB_A, gw_mac, g_a2.ip);
    /* the same frame to a neighbour of its session is answered: the probe works */
    reaches(&g_a1, "answered", "raw %s 8080 %s %s", g_a2.ip, gw_mac, g_a1.ip);
}

static void test_isolation(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    box_add(&g_a1, "a1", "session-a", PUB_A);
    box_add(&g_a2, "a2", "session-a", 0);
    box_add(&g_b1, "b1", "session-b", PUB_B);
    char *gw_mac = out_of("cat /sys/class/net/" NET "/address");
    /* the host listens; it answers itself */
    reaches(NULL, "ok tcp host", "tcp 127.0.0.1 %d", HOST_PORT);
    /* route_localnet is on (127.0.0.1 is published), the DROP with it */
    char *rl = out_of("cat /proc/sys/net/ipv4/conf/" NET "/route_localnet");
    assert_string_equal(rl, "1");
    free(rl);
    /* no IPv6 on the bridge or in the kernel */
    char *v6 = out_of(
        "ip -6 -o addr show dev " NET "; ip netns exec %s ip -6 -o addr show dev eth0", g_a1.ns);
    assert_string_equal(v6, "");
    free(v6);
    check_sessions();
    check_host_closed(gw_mac);
    /* published ports: on the published address (127.0.0.1, the kernel
     * host), from the host; not on another address; not from a kernel of
     * another session through the host's address */
    reaches(NULL, "ok tcp b1 from ", "tcp 127.0.0.1 %d", PUB_B);
    reaches(NULL, "ok tcp a1 from ", "tcp 127.0.0.1 %d", PUB_A);
    if (g_other[0]) {
        reaches(NULL, "fail", "tcp %s %d", g_other, PUB_B);
    }
    reaches(&g_a1, "fail", "tcp %s %d", GATEWAY, PUB_B);
    /* forged: a1's MAC on b1's port (the port is locked to b1's MAC), and
     * a2's address from b1's MAC (no session rule matches: the
     * bridge-to-bridge DROP) */
    char *drops0 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | awk '$3 == \"DROP\" && $6 == \"" NET
               "\" && $7 == \"" NET "\" {print $1}'");
    char *a1_mac = out_of("ip netns exec %s cat /sys/class/net/eth0/address", g_a1.ns);
    char *b1_mac = out_of("ip netns exec %s cat /sys/class/net/eth0/address", g_b1.ns);
    sh("ip -n %s link set eth0 address %s", g_b1.ns, a1_mac);
    reaches(&g_b1, "fail", "icmp %s", g_a2.ip);
    sh("ip -n %s link set eth0 address %s", g_b1.ns, b1_mac);
    sh("ip -n %s addr add %s/32 dev eth0", g_b1.ns, g_a2.ip);
    reaches(&g_b1, "silent", "raw %s 8080 %s %s", g_a1.ip, gw_mac, g_a2.ip);
    sh("ip -n %s addr del %s/32 dev eth0", g_b1.ns, g_a2.ip);
    char *drops1 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | awk '$3 == \"DROP\" && $6 == \"" NET
               "\" && $7 == \"" NET "\" {print $1}'");
    if (atoi(drops1) <= atoi(drops0))
        fail_msg("forged source not dropped: %s -> %s", drops0, drops1);
    reaches(&g_b1, "fail", "tcp %s 8080", g_a1.ip); /* and b1 as itself still cannot */
    free(drops0);
    free(drops1);
    free(a1_mac);
    free(b1_mac);
    /* a kernel attached by Debian's bridge plugin (agent.cni_bridge =
     * bridge), which knows no portIsolation: cni_add isolates its port */
    if (access("/usr/lib/cni/bridge", X_OK) == 0) {
        g_conf.bridge = "/usr/lib/cni/bridge";
        box_add(&g_b2, "b2", "session-b", 0);
        g_conf.bridge = g_bridge;
        json_t *res = json_loads(g_b2.result, 0, NULL);
        const char *veth = json_string_value(
            json_object_get(json_array_get(json_object_get(res, "interfaces"), 1), "name"));
        assert_non_null(veth);
        char *bl = out_of("bridge -d link show dev %s", veth);
        if (!strstr(bl, "isolated on") || !strstr(bl, "locked on")) fail_msg("%s: %s", veth, bl);
        free(bl);
        json_decref(res);
        /* every address still pinned to its MAC (the bridge's MAC did not
         * follow the new port's, which would have flushed them) */
        char *neigh = out_of("ip neigh show dev " NET " nud permanent");
        const box *all[] = {&g_a1, &g_a2, &g_b1, &g_b2};
        for (int i = 0; i < 4; i++) {
            char *want = ts_asprintf("%s lladdr", all[i]->ip);
            if (!strstr(neigh, want)) fail_msg("no permanent entry for %s: %s", all[i]->id, neigh);
            free(want);
        }
        free(neigh);
        reaches(&g_b2, "ok tcp b1 from ", "tcp %s 8080", g_b1.ip);
        reaches(&g_a1, "fail", "tcp %s 8080", g_b2.ip);
        reaches(&g_b1, "ok tcp b2 from ", "tcp %s 8080", g_b2.ip);
    }
    /* the metadata range is dropped on the way out */
    char *deny0 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    reaches(&g_a1, "fail", "tcp 169.254.169.254 80");
    char *deny1 =
        out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    if (atoi(deny1) <= atoi(deny0)) fail_msg("169.254.169.254 not dropped: %s -> %s", deny0, deny1);
    free(deny0);
    free(deny1);
    /* a kernel alone in its session (no session id: cluster_size 1) gets no
     * rules of its own: it reaches no other kernel and none reaches it, and
     * its way out still goes through the deny list */
    /* (this network's lines, and any naming c1's address: other stacks on
     * the host change the host's rules meanwhile) */
    int rules0 = our_lines();
    box_add(&g_c1, "c1", "", 0);
    assert_int_equal(our_lines(), rules0);
    char *c1_rules =
        out_of("iptables-save | grep -c -F -e '%s/' -e '%s ' || true", g_c1.ip, g_c1.ip);
    assert_int_equal(atoi(c1_rules), 0);
    free(c1_rules);
    reaches(&g_c1, "fail", "tcp %s 8080", g_a1.ip);
    reaches(&g_c1, "fail", "icmp %s", g_b1.ip);
    reaches(&g_a1, "fail", "tcp %s 8080", g_c1.ip);
    reaches(&g_b1, "fail", "tcp %s 8080", g_c1.ip);
    reaches(&g_c1, "fail", "tcp %s %d", GATEWAY, HOST_PORT);
    deny0 = out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    reaches(&g_c1, "fail", "tcp 169.254.169.254 80");
    deny1 = out_of("iptables -w -L TESSERA-FWD-" NET " -v -x -n | grep 169.254 | awk '{print $1}'");
    if (atoi(deny1) <= atoi(deny0)) fail_msg("c1: 169.254.169.254 not dropped by the deny list");
    free(deny0);
    free(deny1);
    box_del(&g_c1);
    free(gw_mac);
}

/* The rules gone (the host's firewall flushed, say) come back when the
 * agent sets the network up, as it does at every start. */
static void test_restart(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char *gw_mac = out_of("cat /sys/class/net/" NET "/address");
    int before_n = our_lines();
    char *jumps = out_of("iptables-save -t filter | grep -c 'tessera:" NET "\"'");
    assert_string_equal(jumps, "3");
    free(jumps);
    /* without them: the hole this is about (the raw frame is answered, the
     * sessions reach each other): the checks above can fail */
    sh("iptables -w -D INPUT -i " NET " -m comment --comment tessera:" NET " -j TESSERA-IN-" NET);
    sh("iptables -w -F TESSERA-FWD-" NET);
    sh("iptables -w -F TESSERA-SES-" NET);
    /* and a1 as a kernel of an agent from before the records: its state.json
     * is all there is */
    sh("rm /run/tessera-agent/netfilter/" NET "/*,%s", g_a1.id);
    reaches(&g_a1, "answered", "raw 127.0.0.1 %d %s %s", HOST_PORT, gw_mac, g_a1.ip);
    reaches(&g_a1, "ok tcp b1", "tcp %s 8080", g_b1.ip);
    /* an agent's start */
    ts_err err = {{0}};
    if (!cni_network_setup(NET, SUBNET, &err)) fail_msg("cni_network_setup: %s", err.msg);
    assert_int_equal(our_lines(), before_n);
    check_sessions();
    check_host_closed(gw_mac);
    /* and again: nothing changes, nothing is duplicated */
    assert_true(cni_network_setup(NET, SUBNET, &err));
    assert_int_equal(our_lines(), before_n);
    free(gw_mac);
}

static void test_del_and_remove(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    char *n = out_of("iptables-save | grep -c 'tessera:" NET ":%s\"'", g_b1.id);
    assert_string_equal(n, "2");
    free(n);
    char sess_b[17];
    netfilter_session_key(NET, "session-b", sess_b);
    box_del(&g_b2); /* b1 is the last of session b then */
    box_del(&g_b1);
    n = out_of("iptables-save | grep -c -e 'tessera:" NET ":%s\"' -e 'TESSERA-S-%s'", g_b1.id,
               sess_b);
    assert_string_equal(n, "0"); /* its rules, and its session's chain */
    free(n);
    box_del(&g_a1);
    reaches(&g_a2, "fail", "tcp %s 8080", g_a1.ip);
    box_del(&g_a2);
    char sess_a[17];
    netfilter_session_key(NET, "session-a", sess_a);
    n = out_of("iptables-save | grep -c -e 'tessera:" NET ":' -e 'TESSERA-S-%s' -e 'TESSERA-S-%s'",
               sess_a, sess_b);
    assert_string_equal(n, "0");
    free(n);
    n = out_of("ls /run/tessera-agent/netfilter/" NET " | wc -l");
    assert_string_equal(n, "0");
    free(n);
    /* the network: every chain, jump and the masquerade rule */
    sh("ip link del " NET);
    ts_err err = {{0}};
    if (!cni_network_remove(NET, SUBNET, &err)) fail_msg("cni_network_remove: %s", err.msg);
    assert_int_equal(our_lines(), 0);
    assert_int_equal(sh("test -e /run/tessera-agent/netfilter/" NET), 1 << 8);
}

/* Kernels' ADDs and DELs at once (applied a batch at a time): every rule
 * once, in its place. No bridge needed: rules only. */
typedef struct job {
    pthread_t t;
    const netfilter_net *net;
    netfilter_kernel k;
    bool add, ok;
    ts_err err;
} job;

static void *job_run(void *arg)
{
    job *j = arg;
    j->ok = j->add ? netfilter_kernel_add(j->net, &j->k, &j->err)
                   : netfilter_kernel_del(j->net, j->k.id, &j->err);
    return NULL;
}

static void run_jobs(job *jobs, int n, bool add)
{
    for (int i = 0; i < n; i++) {
        jobs[i].add = add;
        assert_int_equal(pthread_create(&jobs[i].t, NULL, job_run, &jobs[i]), 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(jobs[i].t, NULL);
        if (!jobs[i].ok) fail_msg("%s %s: %s", add ? "add" : "del", jobs[i].k.id, jobs[i].err.msg);
    }
}

static void test_concurrent_changes(void **state)
{
    (void)state;
    SKIP_IF_UNAVAILABLE();
    netfilter_policy pol;
    netfilter_policy_default(&pol);
    char records[200];
    snprintf(records, sizeof(records), "%s/records", g_tmp);
    netfilter_net n = {.network = "tstnf1",
                       .subnet = "10.231.191.0/24",
                       .policy = &pol,
                       .records_dir = records,
                       .kernels_dir = NULL};
    ts_err err = {{0}};
    if (!netfilter_setup(&n, &err)) fail_msg("setup: %s", err.msg);
    job jobs[8];
    memset(jobs, 0, sizeof(jobs));
    for (int i = 0; i < 8; i++) {
        jobs[i].net = &n;
        snprintf(jobs[i].k.id, sizeof(jobs[i].k.id), "tstnf1-k%d", i);
        snprintf(jobs[i].k.ip, sizeof(jobs[i].k.ip), "10.231.191.%d", 10 + i);
        snprintf(jobs[i].k.mac, sizeof(jobs[i].k.mac), "02:00:00:00:01:%02x", i);
        netfilter_session_key("tstnf1", i % 2 ? "odd" : "even", jobs[i].k.session);
    }
    run_jobs(jobs, 8, true);
    char *t = out_of("iptables-save -t filter | grep -e 'TESSERA-SES-tstnf1' -e '%s' -e '%s'",
                     jobs[0].k.session, jobs[1].k.session);
    for (int i = 0; i < 8; i++) {
        char *a = ts_asprintf("-A TESSERA-SES-tstnf1 -s %s/32", jobs[i].k.ip);
        char *b = ts_asprintf("-A TESSERA-S-%s -d %s/32", jobs[i].k.session, jobs[i].k.ip);
        assert_int_equal(count(t, a), 1);
        assert_int_equal(count(t, b), 1);
        free(a);
        free(b);
    }
    char *last = strrchr(t, '\n');
    assert_non_null(last);
    last = strstr(t, "-A TESSERA-SES-tstnf1 ! -s ");
    assert_non_null(last); /* the forged-source DROP stays last of its chain */
    assert_null(strstr(last + 1, "-A TESSERA-SES-tstnf1 "));
    free(t);
    char *nrec = out_of("ls %s/tstnf1 | wc -l", records);
    assert_string_equal(nrec, "8");
    free(nrec);
    run_jobs(jobs, 8, false);
    t = out_of("iptables-save -t filter | grep -c -e 'tessera:tstnf1:' -e '%s' -e '%s'",
               jobs[0].k.session, jobs[1].k.session);
    assert_string_equal(t, "0"); /* the kernels' rules and both session chains */
    free(t);
    assert_true(netfilter_remove("tstnf1", records, &err));
    t = out_of("iptables-save | grep -c tstnf1");
    assert_string_equal(t, "0");
    free(t);
}

int main(void)
{
    const struct CMUnitTest root[] = {
        cmocka_unit_test(test_isolation),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_del_and_remove),
        cmocka_unit_test(test_concurrent_changes),
    };
    return cmocka_run_group_tests_name("as root", root, root_setup, root_teardown);
}
