#!/usr/bin/env bash
# Edge read throughput: requests/s of `dirsvc edge` answering GET services/{id}?view=brief (public
# tier, random IDs of a generated 100,000-service directory) from its copy, as a ratio to the same
# read on its primary. Both are driven by wrk with the same settings, in turn, five rounds, in one
# run of this script; the edge bootstraps its copy from the primary first (its time is printed).
# Then the edge's lag under a list-heavy load: a record is taken down and restored on the primary
# (`dirsvc record`, each a process) 20 times, and the time until the edge answers the change is
# measured without load and with 32 connections of service lists on the edge (p50 and max).
#
#   bench/edge.sh [SERVICES] [DURATION]      defaults: 100000 services, 10s per node and round
services=${1:-100000}
duration=${2:-10s}
source "$(dirname "$0")/setup.sh"
rm -rf "$out/edge-replica" "$out/edge-data"
token=bench-replication-token
limits=(--base-url http://127.0.0.1:$port --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000)
"$out/dirsvc" primary --data "$data" --replica-dir "$out/edge-replica" --replication-token "$token" \
  --addr 127.0.0.1:$port "${limits[@]}" 2>"$out/edge-primary.log" &
primary=$!
trap 'kill $primary $edge 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:$port
start=$(date +%s.%N)
"$out/dirsvc" edge --data "$out/edge-data" --primary http://127.0.0.1:$port --replication-token "$token" \
  --addr 127.0.0.1:$((port + 2)) --metrics-addr 127.0.0.1:$((port + 1002)) "${limits[@]}" 2>"$out/edge-edge.log" &
edge=$!
copied() { curl -s http://127.0.0.1:$((port + 1002))/healthz | grep -q '"name"'; }
wait_until 1800 "the edge's copy of the directory" copied
echo "edge bootstrapped the directory in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e-s}') s"
wait_ready 127.0.0.1:$((port + 2))
echo "edge ready (search index loaded) $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e-s}') s after its start"
head -1000 "$out/ids.txt" | while read -r id; do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/d/demo/services/$id?view=brief")" = 200 ] && echo "$id"
done > "$out/edge-ids.txt"
# The edge answers each the same bytes as the primary.
for id in $(head -20 "$out/edge-ids.txt"); do
  cmp -s <(curl -s "http://127.0.0.1:$port/v1/d/demo/services/$id?view=brief") <(curl -s "http://127.0.0.1:$((port + 2))/v1/d/demo/services/$id?view=brief") \
    || { echo "the edge answers $id differently" >&2; exit 1; }
done

rps() { IDS="$out/edge-ids.txt" wrk -t1 -c32 -d"$duration" --latency -s bench/random_ids.lua "$1" | tee "$out/wrk-$2.txt" | awk '/Requests\/sec/ {print $2}'; }
echo "== warm-up"
for p in $port $((port + 2)); do IDS="$out/edge-ids.txt" wrk -t1 -c32 -d5s -s bench/random_ids.lua "http://127.0.0.1:$p" >/dev/null; done
ratios=()
for round in 1 2 3 4 5; do
  p=$(rps http://127.0.0.1:$port "primary-$round")
  e=$(rps http://127.0.0.1:$((port + 2)) "edge-$round")
  ratio=$(awk -v a="$e" -v b="$p" 'BEGIN {printf "%.2f", a/b}')
  ratios+=("$ratio")
  echo "round $round: edge $e req/s (p99 $(awk '/ 99%/ {print $2}' "$out/wrk-edge-$round.txt")), primary $p req/s (p99 $(awk '/ 99%/ {print $2}' "$out/wrk-primary-$round.txt")), ratio $ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | sed -n 3p)
echo "median ratio edge/primary $median (target >= 0.9)"

# lag: the time from a command's end on the primary until the edge answers its change.
lag() {
  local id ms=() t0 want
  id=$(sed -n 7p "$out/edge-ids.txt")
  for i in $(seq 20); do
    if [ $((i % 2)) = 1 ]; then op=takedown want=404; else op=restore want=200; fi
    "$out/dirsvc" record --data "$data" --dir demo "$op" "$id" >/dev/null 2>&1
    t0=$(date +%s%N)
    until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((port + 2))/v1/d/demo/services/$id?view=brief")" = "$want" ]; do :; done
    ms+=($(( ($(date +%s%N) - t0) / 1000000 )))
  done
  printf '%s\n' "${ms[@]}" | sort -n | awk '{a[NR]=$1} END {printf "p50 %d ms, max %d ms", a[int((NR+1)/2)], a[NR]}'
}
grep -m 2000 '"kind":"location"' "$file" | grep -o '"areas":\[[^]]*\]' | grep -o '"[a-z]\+:[^"]*"' | tr -d '"' | sort -u \
  | sed 's/.*/\/v1\/d\/demo\/services?area=&\&limit=100/' > "$out/edge-lists.txt"
echo "== the edge's lag after a change on the primary"
echo "without load: $(lag)"
PATHS="$out/edge-lists.txt" wrk -t1 -c32 -d120s -s bench/paths.lua http://127.0.0.1:$((port + 2)) > "$out/wrk-edge-lists.txt" &
lists=$!
sleep 2
echo "with 32 connections of service lists on the edge: $(lag)"
kill $lists 2>/dev/null || true
