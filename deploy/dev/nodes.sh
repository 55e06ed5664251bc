# shellcheck shell=sh
# nodes.sh: the nodes of a multi-node development stack (TESSERA_DEV_NODES=N,
# N > 1), sourced by dev-up.sh, dev-down.sh and restart.sh after lib.sh. POSIX
# sh. Each node is a network namespace with an address of its own on a bridge
# that plays the data-centre network; its tessera-agent runs in it and reaches
# the control plane over that network only (docs/operations.md, "Several
# hosts").
#
# Names and addresses, per stack (<n> in 0..249: derived from the stack's
# agent port, the first whose bridge is free; kept in <state>/nodes/net):
#   tsnet<n>                 the bridge (on the host): 10.215.<n>.0/24
#   10.215.<n>.1             its host-side address: the control plane's
#   tsnet<n>-node<k>         node k's network namespace (ip netns)
#   tsnet<n>n<k> / eth0      node k's veth pair (host end / in the namespace)
#   10.215.<n>.<10+k>        node k's address (default route: the control plane)
#   TESSERA-NODES-tsnet<n>   the host's INPUT chain for the bridge: the nodes
#                            reach the control plane's address, nothing else
#                            of the host; FORWARD drops what would leave the
#                            network (comment tessera-nodes:tsnet<n>)
# Node k's agent (process agent@node<k>): id node<k>, state
# <state>/node<k>/agent, CNI bridge tsnet<n>c<k> (inside the namespace),
# kernels in 10.<216+k>.<n>.0/24, published ports 30000+100(k-1) .. +99 on
# the node's address.

# shellcheck disable=SC2034 # read by dev-up.sh
NODES_MAX=16
NODES_PREFIX=10.215

nodes_bridge() { echo "tsnet$1"; }
nodes_cp_addr() { echo "$NODES_PREFIX.$1.1"; }
nodes_subnet() { echo "$NODES_PREFIX.$1.0/24"; }
nodes_chain() { echo "TESSERA-NODES-tsnet$1"; }
node_netns() { echo "tsnet$1-node$2"; }
node_veth() { echo "tsnet$1n$2"; }
node_addr() { echo "$NODES_PREFIX.$1.$((10 + $2))"; }
node_cni_network() { echo "tsnet$1c$2"; }
node_cni_subnet() { echo "10.$((216 + $2)).$1.0/24"; }
node_port_range() { echo "$((30000 + ($2 - 1) * 100))-$((30099 + ($2 - 1) * 100))"; }

# nodes_count STATE: the stack's node count (1 for a one-node stack).
nodes_count() {
  _nc=$(cat "$1/nodes/count" 2>/dev/null) || _nc=1
  case $_nc in ''|*[!0-9]*) _nc=1 ;; esac
  echo "$_nc"
}
# nodes_net STATE: the stack's <n>, or nothing.
nodes_net() {
  _nn=$(cat "$1/nodes/net" 2>/dev/null) || return 1
  case $_nn in ''|*[!0-9]*) return 1 ;; esac
  echo "$_nn"
}

# nodes_claim STATE START: the first free <n> from START on (mod 250): its
# bridge made (the claim: two stacks starting together cannot both make
# it), its address and the host's rules set, recorded in STATE/nodes/net.
nodes_claim() {
  mkdir -p "$1/nodes"
  _i=0
  while [ "$_i" -lt 250 ]; do
    _n=$((($2 + _i) % 250))
    _i=$((_i + 1))
    [ -z "$(ip -4 route show "$(nodes_subnet "$_n")" 2>/dev/null)" ] || continue
    ip link add name "$(nodes_bridge "$_n")" type bridge 2>/dev/null || continue
    echo "$_n" >"$1/nodes/net"
    _br=$(nodes_bridge "$_n")
    # IPv4 only: no link-local path from a node to the host's other listeners
    [ ! -w "/proc/sys/net/ipv6/conf/$_br/disable_ipv6" ] || echo 1 >"/proc/sys/net/ipv6/conf/$_br/disable_ipv6"
    ip addr add "$(nodes_cp_addr "$_n")/24" dev "$_br" &&
      ip link set "$_br" up &&
      nodes_host_rules "$_n" -A || return 1
    return 0
  done
  echo "nodes: no free node network 10.215.0-249.0/24" >&2
  return 1
}

# nodes_host_rules N -A|-D: the host's rules for the node network (add or delete).
nodes_host_rules() {
  _br=$(nodes_bridge "$1") _ch=$(nodes_chain "$1")
  if [ "$2" = -A ]; then
    iptables -w -N "$_ch" 2>/dev/null || iptables -w -F "$_ch" || return 1
    iptables -w -A "$_ch" -d "$(nodes_cp_addr "$1")/32" -j RETURN &&
      iptables -w -A "$_ch" -j DROP &&
      iptables -w -I INPUT -i "$_br" -j "$_ch" &&
      iptables -w -I FORWARD -i "$_br" ! -o "$_br" -m comment --comment "tessera-nodes:$_br" -j DROP
    return
  fi
  while iptables -w -D INPUT -i "$_br" -j "$_ch" 2>/dev/null; do :; done
  while iptables -w -D FORWARD -i "$_br" ! -o "$_br" -m comment --comment "tessera-nodes:$_br" \
    -j DROP 2>/dev/null; do :; done
  iptables -w -F "$_ch" 2>/dev/null
  iptables -w -X "$_ch" 2>/dev/null
  return 0
}

# node_up N K: node K's namespace, veth pair and address.
node_up() {
  _ns=$(node_netns "$1" "$2") _ve=$(node_veth "$1" "$2")
  ip netns add "$_ns" &&
    ip link add "$_ve" type veth peer name eth0 netns "$_ns" &&
    ip link set "$_ve" master "$(nodes_bridge "$1")" up &&
    ip -n "$_ns" link set lo up &&
    ip -n "$_ns" addr add "$(node_addr "$1" "$2")/24" dev eth0 &&
    ip -n "$_ns" link set eth0 up &&
    ip -n "$_ns" route add default via "$(nodes_cp_addr "$1")"
}

# nodes_kernels_cleanup STATE K: what node K's agent leaves when it was killed
# (agent.destroy_on_stop did not run): its kernels' containers (runc delete
# --force: their processes and cgroups), their network namespaces in
# /run/netns, and every mount under <state>/node<k> (kernels' rootfs and
# disks, the agent's sysfs). Only while that agent does not run.
nodes_kernels_cleanup() {
  dev_alive "$1/run" "agent@node$2" && return 0
  _nd=$1/node$2
  [ -d "$_nd" ] || return 0
  kernels_cleanup "$_nd/agent"
  # mount points under the node's dir, deepest first (mountinfo's 5th field,
  # octal escapes for blanks)
  awk -v d="$_nd/" '{ p = $5; gsub(/\\040/, " ", p); if (index(p, d) == 1) print length(p) " " p }' \
    /proc/self/mountinfo | sort -rn | cut -d' ' -f2- | while IFS= read -r _mp; do
    umount -l "$_mp" 2>/dev/null
  done
  return 0
}

# kernels_cleanup AGENT_DIR: what the kernels of a killed agent (state dir
# AGENT_DIR) left outside it: runc's containers, cgroups, network namespaces.
kernels_cleanup() {
  for _kd in "$1"/kernels/*; do
    [ -d "$_kd" ] || continue
    _kid=$(basename "$_kd")
    case $_kid in ''|*[!A-Za-z0-9_.-]*) continue ;; esac
    command -v runc >/dev/null 2>&1 && runc delete --force "$_kid" >/dev/null 2>&1
    for _cg in /sys/fs/cgroup/*/tessera/"$_kid" /sys/fs/cgroup/tessera/"$_kid"; do
      [ -d "$_cg" ] && rmdir "$_cg" 2>/dev/null
    done
    if [ -e "/run/netns/tessera-$_kid" ]; then
      umount "/run/netns/tessera-$_kid" 2>/dev/null
      rm -f "/run/netns/tessera-$_kid"
    fi
  done
  return 0
}

# nodes_down STATE: every node's namespace, the bridge, the host's rules and
# the agents' records in /run; after the processes are gone (dev-down.sh).
# Nothing when the stack has no node network.
nodes_down() {
  _n=$(nodes_net "$1") || return 0
  _k=1 _kept=""
  _cnt=$(nodes_count "$1")
  while [ "$_k" -le "$_cnt" ] || [ -e "/run/netns/$(node_netns "$_n" "$_k")" ]; do
    if dev_alive "$1/run" "agent@node$_k"; then
      echo "nodes: agent@node$_k still runs: node $_k and the node network kept" >&2
      _kept="$_kept $_k"
      _k=$((_k + 1))
      continue
    fi
    nodes_kernels_cleanup "$1" "$_k"
    _net=$(node_cni_network "$_n" "$_k")
    ip netns delete "$(node_netns "$_n" "$_k")" 2>/dev/null
    ip link delete "$(node_veth "$_n" "$_k")" 2>/dev/null
    rm -rf "/run/tessera-agent/netfilter/$_net"
    rm -f "/run/tessera-portmap/verified.$_net"
    grep -l "tessera-portmap:$_net:" /run/tessera-portmap/* 2>/dev/null | while IFS= read -r _f; do
      rm -f "$_f"
    done
    _k=$((_k + 1))
    [ "$_k" -le 64 ] || break
  done
  [ -z "$_kept" ] || return 1
  nodes_host_rules "$_n" -D
  ip link delete "$(nodes_bridge "$_n")" type bridge 2>/dev/null
  rm -f "$1/nodes/net"
  return 0
}
