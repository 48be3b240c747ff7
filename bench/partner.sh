#!/usr/bin/env bash
# Partner access benchmarks on a generated 100,000-service directory, over loopback with wrk:
#  1. token verification: requests/s of brief service reads by a partner client (bearer token) against
#     the same reads by an anonymous caller, random among the same services, five interleaved rounds;
#     the ratio anonymous/partner is the cost a token adds (target: at most 1.20);
#  2. the service list: pages of 100 (limit=100) at random cursors, anonymous: requests/s and p95.
#
#   bench/partner.sh [SERVICES] [DURATION]      defaults: 100000 services, 10s per measurement
services=${1:-100000}
duration=${2:-10s}
source "$(dirname "$0")/setup.sh"
sed 's/.*/\/v1\/d\/demo\/services\/&?view=brief/' "$out/ids.txt" > "$out/read-paths.txt"

# A partner client whose limit does not get in the way of a load test.
client=$("$out/dirsvc" clients --data "$data" create --name "Load test" --partner --directory demo --tier partner \
  --scopes "graph:read" --per-minute 1000000000 --per-day 1000000000)
id=$(echo "$client" | sed 's/.*"clientId":"\([^"]*\)".*/\1/')
secret=$(echo "$client" | sed 's/.*"clientSecret":"\([^"]*\)".*/\1/')

"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/serve.log" &
serve=$!
trap 'kill $serve 2>/dev/null || true; "$out/dirsvc" clients --data "$data" revoke "$id" >/dev/null 2>&1 || true' EXIT
wait_ready 127.0.0.1:$port
# The first read opens the directory (and migrates a folder made by an older version).
curl -sf --max-time 600 -o /dev/null http://127.0.0.1:$port/v1/d/demo/developers
token=$(curl -sf -u "$id:$secret" -d grant_type=client_credentials -d directory=demo http://127.0.0.1:$port/oauth/token \
  | sed 's/.*"access_token":"\([^"]*\)".*/\1/')

run() { PATHS="$1" TOKEN="$2" wrk -t1 -c32 -d"$duration" --latency -s bench/paths.lua http://127.0.0.1:$port | tee "$out/wrk-$3.txt" | awk '/Requests\/sec/ {print $2}'; }

echo "== 1. token verification (brief reads of the same random services)"
PATHS="$out/read-paths.txt" wrk -t1 -c32 -d5s -s bench/paths.lua http://127.0.0.1:$port >/dev/null
PATHS="$out/read-paths.txt" TOKEN="$token" wrk -t1 -c32 -d5s -s bench/paths.lua http://127.0.0.1:$port >/dev/null
ratios=()
for round in 1 2 3 4 5; do
  anon=$(run "$out/read-paths.txt" "" "anon-$round")
  partner=$(run "$out/read-paths.txt" "$token" "partner-$round")
  ratio=$(awk -v a="$anon" -v p="$partner" 'BEGIN {printf "%.2f", a/p}')
  ratios+=("$ratio")
  echo "round $round: anonymous $anon req/s, partner $partner req/s, cost ratio partner/anonymous $ratio"
done
echo "median cost ratio $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n 3p) (target <= 1.20)"

echo "== 2. service list, pages of 100"
: > "$out/list-paths.txt"
next="/v1/d/demo/services?limit=100"
while [ -n "$next" ]; do
  echo "$next" >> "$out/list-paths.txt"
  cursor=$(curl -sf "http://127.0.0.1:$port$next" | grep -o '"nextCursor":"[^"]*"' | sed 's/"nextCursor":"\(.*\)"/\1/' || true)
  next=""
  [ -n "$cursor" ] && next="/v1/d/demo/services?limit=100&cursor=$cursor"
done
echo "$(wc -l < "$out/list-paths.txt") pages; wrk reads them at random"
PATHS="$out/list-paths.txt" wrk -t1 -c32 -d5s -s bench/paths.lua http://127.0.0.1:$port >/dev/null
rps=$(run "$out/list-paths.txt" "" list)
echo "service list: $rps req/s, $(grep p95 "$out/wrk-list.txt"), p50 $(awk '/ 50%/ {print $2}' "$out/wrk-list.txt"), p99 $(awk '/ 99%/ {print $2}' "$out/wrk-list.txt")"
