#!/usr/bin/env bash
# Several "nodes" on one machine: each a network namespace with its own hostname (a UTS
# namespace), joined by veth pairs to one bridge, optionally rate-shaped. The nodes share the
# filesystem and the processes' view of the machine; what differs is the network stack and the
# host name, which is what MPI (and zeromini's node detection) see. Needs root.
#
#   scripts/netns-cluster.sh up N [--rate R]   make nodes 1..N (R: a tc rate, e.g. 1gbit, 200mbit)
#   scripts/netns-cluster.sh down              remove everything `up` made (also after a failed up)
#   scripts/netns-cluster.sh status            the nodes, their addresses and link rates
#   scripts/netns-cluster.sh exec NODE CMD...  run CMD on node NODE (1..N)
#   scripts/netns-cluster.sh hosts [K]         MPICH's -hosts list, K ranks per node (default 1)
#   scripts/netns-cluster.sh mpiexec K ARGS... mpiexec across the nodes, K ranks per node
#                                              (ranks preload ZEROMINI_UCX_FINALIZE_LIB, below)
#   scripts/netns-cluster.sh rate NODE R|off   reshape NODE's link (both directions) now
#   scripts/netns-cluster.sh link NODE down|up take NODE's link down or up now
#
# ZEROMINI_NETNS_PREFIX (default zm, at most 5 characters) names everything: namespaces
# PREFIX-nodeI, host names PREFIX-nodeI, the bridge PREFIX-br, the host-side veths PREFIX-vI;
# ZEROMINI_NETNS_SUBNET (default 10.77.0) numbers the nodes SUBNET.I and the bridge SUBNET.254.
# State (node count, rate) lives in /run/zeromini-netns/PREFIX.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"

prefix=${ZEROMINI_NETNS_PREFIX:-zm}
subnet=${ZEROMINI_NETNS_SUBNET:-10.77.0}
state=/run/zeromini-netns/$prefix
bridge=$prefix-br
bridge_ip=$subnet.254

die() {
  echo "netns-cluster: $*" >&2
  exit 1
}
usage() {
  sed -n '/^#   scripts/s/^#   //p' "$0" >&2
  exit 2
}

[[ ${#prefix} -le 5 && $prefix =~ ^[a-z][a-z0-9]*$ ]] ||
  die "ZEROMINI_NETNS_PREFIX '$prefix': 1 to 5 lowercase letters or digits, starting with a letter"
[[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "ZEROMINI_NETNS_SUBNET '$subnet': three numbers, e.g. 10.77.0"

node_name() { echo "$prefix-node$1"; }
node_count() { cat "$state/nodes" 2>/dev/null || echo 0; }
check_node() {
  local n
  n=$(node_count)
  [[ $1 =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= n)) || die "no node '$1' (the cluster has nodes 1..$n)"
}

# Runs a command in node I's network and UTS namespaces.
in_node() {
  local i=$1
  shift
  nsenter --uts="$state/node$i.uts" --net="/var/run/netns/$(node_name "$i")" "$@"
}

# tbf on both ends of node I's veth: the node's egress (its eth0) and its ingress (the host side),
# with the burst of zeromini_tools.netns.
shape() {
  local i=$1 rate=$2 dev
  for dev in "ns:eth0" "host:$prefix-v$i"; do
    local cmd=(tc)
    [[ $dev == ns:* ]] && cmd=(in_node "$i" tc)
    if [[ $rate == off ]]; then
      "${cmd[@]}" qdisc del dev "${dev#*:}" root 2>/dev/null || true
    else
      "${cmd[@]}" qdisc replace dev "${dev#*:}" root tbf rate "$rate" burst "$(burst_for "$rate")" \
        latency 200ms || die "tc could not shape ${dev#*:} of node $i to $rate"
    fi
  done
  echo "$rate" >"$state/rate$i"
}

burst_for() {   # RATE -> bytes (tc units: bit, kbit, mbit, gbit)
  tool netns burst "$1"
}

# The node names resolve everywhere (the nodes share /etc/hosts): Hydra under Slurm and Slurm
# itself address nodes by name. The block is marked, and `down` takes it out again.
hosts_mark="# zeromini netns cluster $prefix"
hosts_edit() {   # add PREFIX SUBNET N | remove
  tool netns hosts "$hosts_mark" "$@"
}

cmd_down() {
  local ns i
  [[ ! -w /etc/hosts ]] || hosts_edit remove
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
    [[ $ns == "$prefix"-node* ]] && ip netns delete "$ns"
  done
  for i in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    [[ $i == "$prefix"-v* ]] && ip link delete "$i" 2>/dev/null || true
  done
  ip link delete "$bridge" 2>/dev/null || true
  if [[ -d $state ]]; then
    for i in "$state"/node*.uts; do
      [[ -e $i ]] || continue
      umount "$i" 2>/dev/null || true
    done
    rm -rf "$state"
  fi
  return 0
}

cmd_up() {
  local n=${1:-} rate=""
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 250)) || die "up: a node count from 1 to 250, not '${n}'"
  shift
  while (($#)); do
    case $1 in
      --rate) rate=${2:?--rate needs a value, e.g. 1gbit}; shift 2 ;;
      *) die "up: unknown argument '$1'" ;;
    esac
  done
  [[ -z $rate ]] || burst_for "$rate" >/dev/null || exit 1
  [[ $(id -u) == 0 ]] || die "up needs root (network namespaces, veths, tc)"
  cmd_down
  mkdir -p "$state"
  # A failed step leaves nothing behind.
  trap 'echo "netns-cluster: up failed; removing what it made" >&2; cmd_down' ERR
  ip link add "$bridge" type bridge
  ip addr add "$bridge_ip/24" dev "$bridge"
  ip link set "$bridge" up
  for ((i = 1; i <= n; i++)); do
    local ns
    ns=$(node_name "$i")
    ip netns add "$ns"
    ip link add "$prefix-v$i" type veth peer name "$prefix-p$i"
    ip link set "$prefix-p$i" netns "$ns"
    ip link set "$prefix-v$i" master "$bridge"
    ip link set "$prefix-v$i" up
    ip -n "$ns" link set "$prefix-p$i" name eth0
    ip -n "$ns" addr add "$subnet.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    touch "$state/node$i.uts"
    unshare --uts="$state/node$i.uts" hostname "$ns"
    echo "$n" >"$state/nodes"   # grows with the nodes made, so exec works on each at once
    [[ -z $rate ]] || shape "$i" "$rate"
  done
  hosts_edit add "$prefix" "$subnet" "$n"
  trap - ERR
  echo "netns-cluster: $n nodes up (${rate:-unshaped}); bridge $bridge $bridge_ip"
}

cmd_status() {
  local n i
  n=$(node_count)
  ((n > 0)) || { echo "netns-cluster: no cluster '$prefix'"; return 1; }
  for ((i = 1; i <= n; i++)); do
    printf 'node %d  %s  %s.%d  rate %s  link %s\n' "$i" "$(in_node "$i" hostname)" "$subnet" "$i" \
      "$(cat "$state/rate$i" 2>/dev/null || echo unshaped)" \
      "$(in_node "$i" cat /sys/class/net/eth0/operstate 2>/dev/null || echo unknown)"
  done
}

cmd_hosts() {
  local k=${1:-1} n i list=()
  n=$(node_count)
  ((n > 0)) || die "no cluster '$prefix' (run: $0 up N)"
  for ((i = 1; i <= n; i++)); do list+=("$subnet.$i:$k"); done
  (IFS=,; echo "${list[*]}")
}

# Hydra starts one proxy per node through the launcher script, which enters the node's
# namespaces; the proxies reach mpiexec at the bridge's address. Within a node MPICH's own shared
# memory carries the messages; between nodes UCX must use TCP: the nodes share one kernel (one
# boot id), which UCX takes for one machine and would reach by shared memory.
# The ranks preload ZEROMINI_UCX_FINALIZE_LIB (default: the repository's build/lib copy, where
# built; "none" for nothing): MPICH 4.0.2 over UCX/TCP can deadlock in MPI_Finalize otherwise
# (src/preload/mpich_ucx_finalize.c says why).
cmd_mpiexec() {
  local k=${1:?mpiexec: ranks per node} preload=() lib
  shift
  lib=${ZEROMINI_UCX_FINALIZE_LIB:-}
  if [[ -z $lib ]]; then   # the default: the repository's build, where there is one
    lib=$root/build/lib/libzeromini_mpich_ucx_finalize.so
    [[ -f $lib ]] || lib=none
  fi
  if [[ $lib != none ]]; then
    [[ -f $lib ]] || die "ZEROMINI_UCX_FINALIZE_LIB '$lib': no such file"
    preload=(-genv LD_PRELOAD "$lib${LD_PRELOAD:+:$LD_PRELOAD}")
  fi
  UCX_TLS=${UCX_TLS:-tcp,self} exec mpiexec -localhost "$bridge_ip" -launcher ssh -launcher-exec "$root/scripts/netns-launch" \
    "${preload[@]}" -hosts "$(cmd_hosts "$k")" -n $(($(node_count) * k)) "$@"
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  exec)   # exec: the command keeps this process (its pid is what a caller started)
    check_node "${2:-}"; i=$2; shift 2
    exec nsenter --uts="$state/node$i.uts" --net="/var/run/netns/$(node_name "$i")" "$@" ;;
  hosts) cmd_hosts "${2:-1}" ;;
  mpiexec) shift; cmd_mpiexec "$@" ;;
  rate) check_node "${2:-}"; shape "$2" "${3:?rate: a rate or off}" ;;
  link)
    check_node "${2:-}"
    case ${3:-} in
      up)
        ip link set "$prefix-v$2" up
        # The node's interface back with its carrier, and the neighbours either side failed to
        # reach while the link was down forgotten: otherwise a new connection across it fails at
        # once ("No route to host") until the failed entry expires.
        for _ in $(seq 50); do
          ip -n "$(node_name "$2")" link show eth0 | grep -q LOWER_UP && break
          sleep 0.1
        done
        ip -n "$(node_name "$2")" neigh flush all
        ip neigh flush dev "$bridge" ;;
      down) ip link set "$prefix-v$2" down ;;
      *) die "link: up or down" ;;
    esac ;;
  *) usage ;;
esac
