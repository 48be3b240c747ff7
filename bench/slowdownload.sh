#!/usr/bin/env bash
# Slow downloads: READERS clients read the same export file at once, each at RATE bytes a second
# (bench/slowread) for SECONDS, from `dirsvc serve` on a generated directory (the JSON export of its
# services, organisations and locations: 52 MB at 20,000 services). Reported: the bytes per second
# each reader held (mean and lowest) and all of them together, how many the server cut before
# SECONDS, and the server's CPU seconds per MB sent (utime+stime of /proc/PID/stat before and after,
# less the idle rate measured just before), beside the same figure for fast reads of the whole file.
# SECONDS past 60 shows there is no whole-response cliff: a reader cut by one is counted cut.
#
#   bench/slowdownload.sh [READERS] [SECONDS] [RATE] [SERVICES]    defaults: 16 readers, 90 s, 307200 B/s, 20000
#
# The data folder is made once (bench/out/slowdownload-SERVICES, with gen and import); the server
# listens on PORT (default 8096).
set -euo pipefail
readers=${1:-16}
secs=${2:-90}
rate=${3:-307200}
services=${4:-20000}
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
port=${PORT:-8096}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "port $port is in use: stop what listens there, or choose another with PORT=" >&2
  exit 1
fi
go build -o "$out/dirsvc" ./cmd/dirsvc
go build -o "$out/slowread" ./bench/slowread
source bench/wait.sh
data="$out/slowdownload-$services"
if [ ! -d "$data/dirs/demo" ]; then
  rm -rf "$data"
  "$out/dirsvc" gen --services "$services" --seed 1 --out "$out/slowdownload-$services.ndjson"
  "$out/dirsvc" import --data "$data" "$out/slowdownload-$services.ndjson" 2>/dev/null
fi
rm -rf "$data/exports" # the exports of earlier runs
ulimit -n 65536 2>/dev/null || true
base=http://127.0.0.1:$port
"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port --anonymous-per-minute 1000000000 \
  --anonymous-per-day 1000000000 2>"$out/slowdownload-serve.log" &
serve=$!
client=$("$out/dirsvc" clients --data "$data" create --name "Slow downloads" --partner --directory demo --tier partner \
  --scopes "graph:read export:run" --per-minute 1000000 --per-day 100000000)
id=$(sed 's/.*"clientId":"\([^"]*\)".*/\1/' <<<"$client")
secret=$(sed 's/.*"clientSecret":"\([^"]*\)".*/\1/' <<<"$client")
trap 'kill $serve 2>/dev/null || true; wait $serve 2>/dev/null || true; "$out/dirsvc" clients --data "$data" revoke "$id" >/dev/null 2>&1 || true' EXIT
wait_ready 127.0.0.1:$port
token=$(curl -sf -u "$id:$secret" -d grant_type=client_credentials -d directory=demo "$base/oauth/token" \
  | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
export_id=$(curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"formats":["json"],"types":["service","organisation","location"]}' "$base/v1/d/demo/exports" \
  | sed 's/.*"id":"\([^"]*\)".*/\1/')
succeeded() { curl -sf -H "Authorization: Bearer $token" "$base/v1/d/demo/exports/$export_id" | grep -q '"status":"succeeded"'; }
wait_until 600 "the export" succeeded
link=$(curl -sf -H "Authorization: Bearer $token" "$base/v1/d/demo/exports/$export_id" \
  | grep -o '"name":"directory.json"[^}]*"url":"[^"]*"' | sed 's/.*"url":"\([^"]*\)"/\1/; s/\\u0026/\&/g')
size=$(curl -sf -o /dev/null -w '%{size_download}' "$link")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "export file directory.json: $size bytes ($services services)"

tick=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$serve/stat"; }
# The server's own rate of CPU at rest, taken off what the reads cost.
c0=$(cpu); sleep 10; c1=$(cpu)
idle_rate=$(awk -v a="$c0" -v b="$c1" -v t="$tick" 'BEGIN {printf "%.5f", (b-a)/t/10}')

# Fast: five whole reads, one after the other.
c0=$(cpu); t0=$(date +%s.%N)
fast=0
for _ in 1 2 3 4 5; do fast=$((fast + $(curl -sf -o /dev/null -w '%{size_download}' "$link"))); done
c1=$(cpu); t1=$(date +%s.%N)
awk -v a="$c0" -v b="$c1" -v t="$tick" -v n="$fast" -v s="$t0" -v e="$t1" -v i="$idle_rate" 'BEGIN {
  w = e - s; c = (b - a) / t - i * w
  printf "fast: 5 whole reads, %d bytes in %.2f s (%.0f MB/s): server CPU %.3f s, %.5f CPU s per MB\n", n, w, n / w / 1e6, c, c / (n / 1e6) }'

# Slow: every reader at once, for secs (bench/slowread paces each and reads through a small buffer).
c0=$(cpu); t0=$(date +%s.%N)
"$out/slowread" --url "$link" --readers "$readers" --rate "$rate" --for "${secs}s" | tee "$out/slowdownload-readers.txt"
c1=$(cpu); t1=$(date +%s.%N)
sent=$(sed -n 's/^bytes //p' "$out/slowdownload-readers.txt")
awk -v a="$c0" -v b="$c1" -v t="$tick" -v s="$t0" -v e="$t1" -v i="$idle_rate" -v n="$sent" 'BEGIN {
  w = e - s; c = (b - a) / t - i * w
  printf "slow: %d bytes read in %.1f s: server CPU %.3f s, %.5f CPU s per MB (idle rate %.4f CPU s/s taken off)\n", n, w, c, c / (n / 1e6), i }'
