#!/usr/bin/env bash
# Single service read benchmark: requests/s of `dirsvc serve` answering GET services/{id}?view=brief
# (public tier, random IDs of a generated 100,000-service directory) over loopback, as a ratio to a
# plain net/http handler writing the same bytes from memory. Both are driven by wrk with the same
# settings, in turn, five rounds, in one run of this script.
#
#   bench/read.sh [SERVICES] [DURATION]      defaults: 100000 services, 10s per server and round
services=${1:-100000}
duration=${2:-10s}
source "$(dirname "$0")/setup.sh"
go build -o "$out/plain" ./bench/plain

# The anonymous rate limits stay on (every request goes through them) but high enough for a load test.
"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/serve.log" &
serve=$!
trap 'kill $serve $plain 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:$port
"$out/plain" --from http://127.0.0.1:$port --ids "$out/ids.txt" --kept "$out/kept.txt" --addr 127.0.0.1:$((port + 1)) &
plain=$!
until curl -sf -o /dev/null "http://127.0.0.1:$((port + 1))/v1/d/demo/services/$(head -1 "$out/kept.txt" 2>/dev/null)"; do sleep 0.2; done
echo "$(wc -l < "$out/kept.txt") services answered 200 to the public; both servers are read at random among them"

rps() { IDS="$out/kept.txt" wrk -t1 -c32 -d"$duration" --latency -s bench/random_ids.lua "$1" | tee "$out/wrk-$2.txt" | awk '/Requests\/sec/ {print $2}'; }
echo "== warm-up"; IDS="$out/kept.txt" wrk -t1 -c32 -d5s -s bench/random_ids.lua http://127.0.0.1:$port >/dev/null
# This machine's speed drifts: the two servers are measured in turn, five rounds, and
# each round's ratio is reported with the median.
ratios=()
for round in 1 2 3 4 5; do
  real=$(rps http://127.0.0.1:$port "dirsvc-$round")
  base=$(rps http://127.0.0.1:$((port + 1)) "plain-$round")
  ratio=$(awk -v a="$real" -v b="$base" 'BEGIN {printf "%.2f", a/b}')
  ratios+=("$ratio")
  echo "round $round: dirsvc $real req/s (p50 $(awk '/ 50%/ {print $2}' "$out/wrk-dirsvc-$round.txt"), p99 $(awk '/ 99%/ {print $2}' "$out/wrk-dirsvc-$round.txt")), plain $base req/s, ratio $ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | sed -n 3p)
echo "median ratio $median (target >= 0.5)"
