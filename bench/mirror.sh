#!/usr/bin/env bash
# Mirroring benchmark (issue 15): a directory A (agg, 10 services of its own) mirrors the generated
# directory of 100,000 services (B, demo), served by `dirsvc serve` over loopback, as B's partner
# client (feed:read graph:read).
#  1. from empty: `dirsvc mirror run-once` harvests B's whole change feed into A (pages of 500, each
#     written in one transaction with its cursor); records written per second;
#  2. steady state: A serves with its background harvester at the default settings (polling every
#     second once caught up); bench/mirrorlag changes services at B through B's admin API, one at a
#     time, and times each change to the first read at A that shows it.
# Targets: at least 20,000 records/s; lag p50 at most 2 s.
#
#   bench/mirror.sh [SERVICES] [CHANGES]      defaults: 100000 services, 30 changes
set -euo pipefail
services=${1:-100000}
changes=${2:-30}
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
# B listens on PORT+1 and A on PORT+2 (PORT default 8090): a server already there would answer in
# place of the one started here, so the script refuses to start instead.
port=${PORT:-8090}
for p in $((port + 1)) $((port + 2)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is in use: stop what listens there, or choose other ports with PORT=" >&2
    exit 1
  fi
done
go build -o "$out/dirsvc" ./cmd/dirsvc
go build -o "$out/mirrorlag" ./bench/mirrorlag
source bench/wait.sh

file="$out/demo-$services.ndjson"
b="$out/mirror-b-$services"
a="$out/mirror-a"
[ -f "$file" ] || "$out/dirsvc" gen --services "$services" --seed 1 --out "$file"
if [ ! -d "$b/dirs/demo" ]; then
  rm -rf "$b"
  "$out/dirsvc" import --data "$b" "$file"
fi
rm -rf "$a"
"$out/dirsvc" gen --services 10 --seed 2 --slug agg --out "$out/agg.ndjson"
"$out/dirsvc" import --data "$a" "$out/agg.ndjson" 2>/dev/null

field() { sed 's/.*"'"$1"'":"\([^"]*\)".*/\1/'; }
client=$("$out/dirsvc" clients --data "$b" create --name "Aggregate" --directory demo --tier partner \
  --scopes "feed:read graph:read" --per-minute 1000000000 --per-day 1000000000)
id=$(echo "$client" | field clientId)
secret=$(echo "$client" | field clientSecret)
admin=$(head -c 32 /dev/urandom | base64)

"$out/dirsvc" serve --data "$b" --addr 127.0.0.1:$((port + 1)) --metrics-addr 127.0.0.1:0 --admin-token "$admin" 2>"$out/mirror-b.log" &
serveb=$!
servea=
trap 'kill $serveb $servea 2>/dev/null || true; "$out/dirsvc" clients --data "$b" revoke "$id" >/dev/null 2>&1 || true' EXIT
wait_ready 127.0.0.1:$((port + 1))
curl -sf --max-time 600 -o /dev/null http://127.0.0.1:$((port + 1))/v1/d/demo/developers # opens the directory

DIRSVC_MIRROR_CLIENT_SECRET="$secret" "$out/dirsvc" mirror --data "$a" add --dir agg --name b \
  --upstream http://127.0.0.1:$((port + 1)) --upstream-dir demo --client-id "$id" --allow-loopback 2>/dev/null

echo "== mirroring $services services from empty (target: >= 20,000 records/s)"
uptime
stats=$(/usr/bin/time -f "%e %U %S %M" -o "$out/mirror-time.txt" "$out/dirsvc" mirror --data "$a" run-once --dir agg b --allow-loopback 2>/dev/null)
written=$(echo "$stats" | sed 's/.*"written":\([0-9]*\).*/\1/')
echo "$stats"
read -r wall user sys rss < "$out/mirror-time.txt"
awk -v n="$written" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" 'BEGIN {
  printf "%d records in %.1f s: %.0f records/s (wall); CPU %.1f s: %.0f records/s (CPU); peak RSS %d MB\n",
    n, w, n / w, u + s, n / (u + s), r / 1024 }'

echo "== steady-state lag from a change at B to a read at A, default settings (target: p50 <= 2 s)"
reader=$("$out/dirsvc" clients --data "$a" create --name "Reader" --directory agg --tier partner --scopes "graph:read")
"$out/dirsvc" serve --data "$a" --addr 127.0.0.1:$((port + 2)) --metrics-addr 127.0.0.1:0 --mirror-allow-loopback 2>"$out/mirror-a.log" &
servea=$!
wait_ready 127.0.0.1:$((port + 2))
token=$(curl -sf -u "$(echo "$reader" | field clientId):$(echo "$reader" | field clientSecret)" \
  -d grant_type=client_credentials -d directory=agg http://127.0.0.1:$((port + 2))/oauth/token | field access_token)
"$out/mirrorlag" -upstream "http://127.0.0.1:$((port + 1))" -mirror "http://127.0.0.1:$((port + 2))" -admin-token "$admin" -token "$token" -file "$file" -n "$changes"
