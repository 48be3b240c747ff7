#!/usr/bin/env bash
# An edge serving many small directories: how long it takes to bootstrap them from the primary, and
# its idle CPU (share of one core) and resident memory, first with the directories unread, then
# after one read of each (every directory open). The primary's figures are printed beside them.
#
#   bench/idle.sh [DIRECTORIES] [SECONDS]     defaults: 1000 directories of 5 services, 60 s idle
set -euo pipefail
n=${1:-1000}
secs=${2:-60}
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
go build -o "$out/dirsvc" ./cmd/dirsvc
source bench/wait.sh
data="$out/many-$n"
# A fresh folder each run: the primary's first replication is part of what an edge waits for.
rm -rf "$data" "$out/many-replica" "$out/many-edge" "$out/many-files"
mkdir -p "$out/many-files"
for i in $(seq 0 $((n - 1))); do
  slug=$(printf 'dir-%04d' "$i")
  "$out/dirsvc" gen --services 5 --seed $((i + 1)) --slug "$slug" --out "$out/many-files/$slug.ndjson"
done
"$out/dirsvc" import --data "$data" "$out"/many-files/*.ndjson 2>/dev/null
ulimit -n 65536 2>/dev/null || true
token=bench-replication-token
"$out/dirsvc" primary --data "$data" --replica-dir "$out/many-replica" --replication-token "$token" \
  --base-url http://127.0.0.1:8093 --addr 127.0.0.1:8093 2>"$out/many-primary.log" &
primary=$!
trap 'kill $primary $edge 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:8093
start=$(date +%s.%N)
"$out/dirsvc" edge --data "$out/many-edge" --primary http://127.0.0.1:8093 --replication-token "$token" \
  --base-url http://127.0.0.1:8093 --addr 127.0.0.1:8094 --metrics-addr 127.0.0.1:9094 --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/many-edge.log" &
edge=$!
copied() { [ "$(curl -s http://127.0.0.1:9094/healthz | grep -o '"name"' | wc -l)" -ge "$n" ]; }
wait_until 3600 "the edge's copies of $n directories" copied
wait_ready 127.0.0.1:8094
echo "edge bootstrapped $n directories in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e-s}') s"

tick=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
rss() { awk '/VmRSS/ {printf "%.0f MiB", $2/1024}' "/proc/$1/status"; }
idle() {
  sleep 5
  local e0 p0 e1 p1
  e0=$(cpu $edge); p0=$(cpu $primary)
  sleep "$secs"
  e1=$(cpu $edge); p1=$(cpu $primary)
  echo "$1: edge $(awk -v a="$e0" -v b="$e1" -v t="$tick" -v s="$secs" 'BEGIN {printf "%.2f", 100*(b-a)/t/s}')% of a core, RSS $(rss $edge); primary $(awk -v a="$p0" -v b="$p1" -v t="$tick" -v s="$secs" 'BEGIN {printf "%.2f", 100*(b-a)/t/s}')% of a core, RSS $(rss $primary)"
}
idle "idle, directories unread"
for i in $(seq 0 $((n - 1))); do
  curl -sf -o /dev/null "http://127.0.0.1:8094/v1/d/$(printf 'dir-%04d' "$i")/developers"
done
idle "idle, every directory read once"
