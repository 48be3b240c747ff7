#!/usr/bin/env bash
# Query cost under load, on a generated directory of 100,000 services served by `dirsvc serve` over
# loopback (wrk from Debian's packages):
#  1. every service-list query shape (no filter; area, type, category, updatedSince alone and
#     combined; cursors; limits 1, 50, 62, 63, 100), one request at a time: p99 per shape
#     (target: at most 20 ms);
#  2. the soak mix (bench/mix.lua: brief reads, record pages, 25% service lists with random filters
#     and limits, a third each identity/gzip/br) with 32 connections for SOAK (default 8m):
#     requests/s (target >= 3,000), p99 (target <= 50 ms), and the server's resident memory every
#     30 s (no upward trend once the cache is full);
#  3. record reads alone, then beside eight anonymous clients each making one list request a second
#     (their allowed rate): record throughput with them as a ratio of without (target >= 0.90);
#  4. the soak mix with 2,000 connections for 30 s: no request waits past the shedding bound (shed
#     requests answer 503 at once); p99 of brief reads under 100 ms.
#
#   bench/soak.sh [SERVICES] [SOAK]      defaults: 100000 services, 8m
services=${1:-100000}
soak=${2:-8m}
source "$(dirname "$0")/setup.sh"

# Paths: record pages and list queries of every shape, with values of the directory.
file="$out/demo-$services.ndjson"
grep -m 20000 '"kind":"location"' "$file" | sed 's/.*"publicId":"\([^"]*\)".*/\/v1\/d\/demo\/locations\/\1/' > "$out/pages.txt"
grep -m 20000 '"kind":"organisation"' "$file" | sed 's/.*"publicId":"\([^"]*\)".*/\/v1\/d\/demo\/organisations\/\1/' >> "$out/pages.txt"
sed 's/.*/\/v1\/d\/demo\/services\/&/' "$out/ids.txt" | head -20000 >> "$out/pages.txt"
areas=($(grep -m 2000 '"kind":"location"' "$file" | grep -o '"areas":\[[^]]*\]' | grep -o '"[a-z]*:[^"]*"' | tr -d '"' | sort -u | shuf -n 200 --random-source=<(yes)))
types=($(grep '"kind":"service"' "$file" | head -20000 | grep -o '"type":"[^"]*"' | cut -d'"' -f4 | sort -u))
cats=($(grep '"kind":"category"' "$file" | grep -o '"code":"[^"]*"' | cut -d'"' -f4 | sort -u))
cursors=($(shuf -n 200 --random-source=<(yes) "$out/ids.txt"))
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
shape() { # one list path of a shape: the filters named, a limit, with or without a cursor
  local q="limit=$1" f
  for f in ${2//,/ }; do
    case $f in
      area) q="$q&area=$(pick "${areas[@]}")" ;;
      type) q="$q&type=$(pick "${types[@]}")" ;;
      category) q="$q&category=$(pick "${cats[@]}")" ;;
      since) q="$q&updatedSince=2026-0$((RANDOM % 9 + 1))-01T00:00:00Z" ;;
      cursor) q="$q&after=$(pick "${cursors[@]}")" ;;
    esac
  done
  echo "/v1/d/demo/services?$q"
}
shapes=(none area type category since area,type area,category type,category area,since area,type,category,since cursor area,cursor type,cursor)
limits=(1 50 62 63 100)
: > "$out/lists.txt"
for s in "${shapes[@]}"; do for l in "${limits[@]}"; do for _ in $(seq 20); do shape "$l" "$s" >> "$out/lists.txt"; done; done; done

"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:8090 --client-ip-header X-Forwarded-For \
  --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/serve.log" &
serve=$!
trap 'kill $serve 2>/dev/null || true' EXIT
until curl -sf http://127.0.0.1:8090/healthz >/dev/null; do sleep 0.2; done
curl -sf --max-time 600 -o /dev/null http://127.0.0.1:8090/v1/d/demo/developers
# The list cursor parameter is named as the server names it in a page's next link.
next=$(curl -sf 'http://127.0.0.1:8090/v1/d/demo/services?limit=1' | grep -o '"next":"[^"]*"' | cut -d'"' -f4)
param=$(echo "$next" | sed -n 's/.*[?&]\([a-zA-Z]*\)=[^&]*$/\1/p'); param=${param:-cursor}
sed -i "s/&after=/\&$param=/" "$out/lists.txt"

echo "== 1. each list shape, one request at a time (p99, target <= 20 ms)"
for s in "${shapes[@]}"; do
  for l in "${limits[@]}"; do
    grep -F "limit=$l&" "$out/lists.txt" | awk -v s="$s" 'BEGIN{n=split(s,f,",")} {ok=1; for(i=1;i<=n;i++){ k=f[i]; if(k=="since")k="updatedSince"; if(k=="cursor")k="'"$param"'"; if(k!="none" && index($0,k"=")==0) ok=0 } if(ok) print}' > "$out/shape.txt"
    [ -s "$out/shape.txt" ] || continue
    p99=$(IDS="$out/ids.txt" PAGES="$out/pages.txt" LISTS="$out/shape.txt" ONLY=lists wrk -t1 -c1 -d3s --latency -s bench/mix.lua http://127.0.0.1:8090 | awk '/ 99%/ {print $2}')
    echo "$s limit=$l: p99 $p99"
  done
done

mix() { IDS="$out/ids.txt" PAGES="$out/pages.txt" LISTS="$out/lists.txt" ONLY="${ONLY:-}" wrk "$@" --latency -s bench/mix.lua http://127.0.0.1:8090; }
rss() { awk '/VmRSS/ {printf "%d MB", $2/1024}' /proc/$serve/status; }

echo "== 2. the soak mix, 32 connections, $soak (target >= 3000 req/s, p99 <= 50 ms, memory flat)"
( while kill -0 $serve 2>/dev/null; do sleep 30; echo "  resident $(rss)"; done ) &
sampler=$!
mix -t2 -c32 -d"$soak" | tee "$out/wrk-soak.txt" | grep -E 'Requests/sec|p99|Non-2xx'
kill $sampler 2>/dev/null || true

echo "== 3. record reads beside eight anonymous list clients at their allowed rate (target ratio >= 0.90)"
alone=$(ONLY=reads mix -t1 -c32 -d20s | awk '/Requests\/sec/ {print $2}')
for i in 1 2 3 4 5 6 7 8; do
  ( while kill -0 $serve 2>/dev/null; do
      curl -s -o /dev/null -H "X-Forwarded-For: 198.51.100.$i" "http://127.0.0.1:8090$(shuf -n1 "$out/lists.txt")"; sleep 1
    done ) &
  listers+=($!)
done
beside=$(ONLY=reads mix -t1 -c32 -d20s | awk '/Requests\/sec/ {print $2}')
kill "${listers[@]}" 2>/dev/null || true
echo "record reads alone $alone req/s, beside the list clients $beside req/s, ratio $(awk -v a="$alone" -v b="$beside" 'BEGIN {printf "%.2f", b/a}')"

echo "== 4. the soak mix with 2,000 connections for 30 s (no wait past the shedding bound)"
ulimit -n 65536 2>/dev/null || true
mix -t2 -c2000 -d30s --timeout 10s | grep -E 'Requests/sec|p99|Non-2xx|Socket errors'
ONLY=reads mix -t1 -c200 -d10s --timeout 10s | grep -E 'p99' | sed 's/^/brief reads beside: /' &
mix -t1 -c1800 -d10s --timeout 10s >/dev/null
wait
