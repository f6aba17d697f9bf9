#!/usr/bin/env bash
# Stages 0-3 and hybrid sharding on 2 nodes x 2 ranks whose link is rate-shaped, measured against
# the planner (results/multinode-netns/). Needs root (scripts/netns-cluster.sh), a build with
# zeromini, zeromini-bench and the MPI_Finalize workaround library, and /usr/bin/python3 with
# matplotlib.
#
#   scripts/multinode-netns.sh [--rate R]... [--build DIR] [OUT_DIR]
#     --rate R   the link rate of each node (tc units; default 1gbit); several: one set each
#     --build    the build directory (default build)
#     OUT_DIR    default results/multinode-netns
#
# For each rate:
#  1. fits the machine file OUT_DIR/netns-RATE.toml (inputs/machines/ format):
#     - the link between nodes: zeromini-bench's all_gather (1 KiB .. 16 MiB) across the two
#       nodes with 2 ranks in each, the layout of the runs, fitted to the planner's ring model
#       t = 3 alpha + 3/4 S / (2 b) (least squares of the relative error): b per device (k = 2
#       ranks share the node's link);
#     - the link within a node: the same at 2 ranks of one node;
#     - compute: a stage-0 run of the deck at 4 ranks on one node (no network): the hardware
#       FLOPs per rank and step (plan) over the measured step time minus its exposed waits;
#  2. runs inputs/multinode-netns.toml across the nodes at each point (stages 0-3; stage 3 with
#     shard groups of a node; stage 3 with hpZ), 5 and then 25 steps, and reads the bytes each
#     node's link carried (the host side of its veth) as well as the run's own counters;
#  3. plans each point with the fitted machine file.
# scripts/multinode_netns.py writes OUT_DIR/table.md and OUT_DIR/predicted-vs-measured.png.
# shellcheck source=lib/prologue.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib/prologue.sh"
rates=()
build=$root/build
out=""
while (($#)); do
  case $1 in
    --rate) rates+=("${2:?--rate needs a value}"); shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,/^# shellcheck source=/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) out=$1; shift ;;
  esac
done
((${#rates[@]})) || rates=(1gbit)
out=${out:-$root/results/multinode-netns}
bin=$build/bin
lib=$build/lib/libzeromini_mpich_ucx_finalize.so
for f in "$bin/zeromini" "$bin/zeromini-bench" "$lib"; do
  [[ -e $f ]] || { echo "multinode-netns: $f not found (build it: cmake --build $build)" >&2; exit 2; }
done
deck=$root/inputs/multinode-netns.toml
cluster=$root/scripts/netns-cluster.sh
export ZEROMINI_NETNS_PREFIX=zmm ZEROMINI_NETNS_SUBNET=10.79.0 ZEROMINI_UCX_FINALIZE_LIB=$lib
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
work=$(mktemp -d /tmp/zeromini-netns.XXXXXX)  # kept with ZEROMINI_KEEP_WORK=1
trap '"$cluster" down >/dev/null 2>&1 || true; [[ ${ZEROMINI_KEEP_WORK:-} == 1 ]] || rm -rf "$work"' EXIT
mkdir -p "$out"
rev=$(revision)

# The points: name and --set overrides.
points=(
  "stage0|zero.stage=0"
  "stage1|zero.stage=1"
  "stage2|zero.stage=2"
  "stage3|zero.stage=3"
  "stage3-node|zero.stage=3 zero.shard_size=node"
  "stage3-hpz|zero.stage=3 zero.secondary_shard_size=2"
)
bench_filter='^Comm/all_gather/(1024|4096|16384|65536|262144|1048576|4194304|16777216)/'
bench_args=(--benchmark_filter="$bench_filter" --benchmark_repetitions=3
  --benchmark_report_aggregates_only=true --benchmark_format=json)

# Bytes node I has sent over its link: what the host side of its veth received.
link_bytes() { cat "/sys/class/net/$ZEROMINI_NETNS_PREFIX-v$1/statistics/rx_bytes"; }

for rate in "${rates[@]}"; do
  dir=$work/$rate
  mkdir -p "$dir"
  echo "multinode-netns: $rate: fitting the machine file"
  # Within a node, and compute: plain MPI on the host (one node).
  mpiexec -n 2 "$bin/zeromini-bench" "${bench_args[@]}" >"$dir/bench-intra.json"
  mpiexec -n 4 "$bin/zeromini" run "$deck" --set zero.stage=0 --out "$dir/compute" \
    >"$dir/compute.log" 2>&1
  "$bin/zeromini" plan "$deck" --ranks 4 --stage 0 --machine "$root/inputs/machines/this-host.toml" \
    --format csv >"$dir/compute-plan.csv"
  "$cluster" up 2 --rate "$rate" >/dev/null
  "$cluster" mpiexec 2 "$bin/zeromini-bench" "${bench_args[@]}" >"$dir/bench-inter.json"
  /usr/bin/python3 "$root/scripts/multinode_netns.py" fit "$dir" "$rate" "$root/inputs/machines/this-host.toml" \
    >"$out/netns-$rate.toml"
  for point in "${points[@]}"; do
    name=${point%%|*}
    read -r -a sets <<<"${point#*|}"
    args=()
    for s in "${sets[@]}"; do args+=(--set "$s"); done
    for steps in 5 25; do
      echo "multinode-netns: $rate: $name, $steps steps"
      before=("$(link_bytes 1)" "$(link_bytes 2)")
      "$cluster" mpiexec 2 "$bin/zeromini" run "$deck" "${args[@]}" --set train.steps=$steps \
        --out "$dir/$name-$steps" >"$dir/$name-$steps.log" 2>&1 ||
        { tail "$dir/$name-$steps.log"; echo "multinode-netns: $name failed" >&2; exit 1; }
      echo "$(($(link_bytes 1) - before[0])) $(($(link_bytes 2) - before[1]))" >"$dir/$name-$steps.link"
    done
    stage=$(sed -n 's/.*zero\.stage=\([0-3]\).*/\1/p' <<<"${point#*|}")
    "$bin/zeromini" plan "$deck" --ranks 4 --stage "$stage" "${args[@]}" \
      --machine "$out/netns-$rate.toml" --format csv >"$dir/$name-plan.csv"
  done
  "$cluster" down >/dev/null
done
/usr/bin/python3 "$root/scripts/multinode_netns.py" report "$work" "$out" \
  --command "scripts/multinode-netns.sh $(printf -- '--rate %s ' "${rates[@]}")" --revision "$rev" \
  --rates "${rates[@]}" --points "${points[@]%%|*}"
