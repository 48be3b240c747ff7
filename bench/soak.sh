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
#   STEPS="1 4" bench/soak.sh            runs only the steps named
services=${1:-100000}
soak=${2:-8m}
steps=" ${STEPS:-1 2 3 4} "
step() { [[ $steps == *" $1 "* ]]; }
source "$(dirname "$0")/setup.sh"

# Paths: record pages (kept once the server runs: those the public may see) and list queries of every
# shape, with values of the directory.
file="$out/demo-$services.ndjson"
grep '"kind":"location"' "$file" | awk 'NR <= 3000' | sed 's/.*"publicId":"\([^"]*\)".*/\/v1\/d\/demo\/locations\/\1/' > "$out/pages.txt"
grep '"kind":"organisation"' "$file" | awk 'NR <= 3000' | sed 's/.*"publicId":"\([^"]*\)".*/\/v1\/d\/demo\/organisations\/\1/' >> "$out/pages.txt"
head -3000 "$out/ids.txt" | sed 's/.*/\/v1\/d\/demo\/services\/&/' >> "$out/pages.txt"
areas=($(grep -m 2000 '"kind":"location"' "$file" | grep -o '"areas":\[[^]]*\]' | grep -o '"[a-z]\+:[^"]*"' | tr -d '"' | sort -u | shuf -n 200 --random-source=<(yes)))
types=($(grep -m 20000 '"kind":"service"' "$file" | grep -o '"type":"[^"]*"' | cut -d'"' -f4 | sort -u))
cats=($(grep '"kind":"category"' "$file" | grep -o '"code":"[^"]*"' | cut -d'"' -f4 | sort -u))
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
shape() { # one list path of a shape: the filters named, a limit, with or without a cursor
  local q="limit=$1" f
  for f in ${2//,/ }; do
    case $f in
      area) q="$q&area=$(pick "${areas[@]}")" ;;
      type) q="$q&type=$(pick "${types[@]}")" ;;
      category) q="$q&category=$(pick "${cats[@]}")" ;;
      since) q="$q&updatedSince=2026-0$((RANDOM % 9 + 1))-01T00:00:00Z" ;;
      cursor) q="$q&cursor=DEEP" ;; # made a real cursor once the server runs (deepen)
    esac
  done
  echo "/v1/d/demo/services?$q"
}
shapes=(none area type category since area,type area,category type,category area,since area,type,category,since cursor area,cursor type,cursor)
limits=(1 50 62 63 100)
: > "$out/lists.txt"
rm -f "$out"/shape-*.txt
for s in "${shapes[@]}"; do for l in "${limits[@]}"; do for _ in $(seq 20); do shape "$l" "$s" | tee -a "$out/lists.txt" >> "$out/shape-$s-$l.txt"; done; done; done

# The directory's files are read once first, as a server that has been running finds them in the page
# cache: the first requests of a shape then measure its query, not the disk (which other work on the
# machine may keep busy).
cat "$data"/dirs/*/*.db > /dev/null
"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port --client-ip-header X-Forwarded-For \
  --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/serve.log" &
serve=$!
trap 'kill $serve 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:$port
curl -sf --max-time 600 -o /dev/null http://127.0.0.1:$port/v1/d/demo/developers
# deepen replaces each cursor=DEEP of a file of list paths by a cursor the server gave for that
# query, 1 to 5 pages in. Cursors are bound to their query, so each is got by following nextCursor.
deepen() {
  local f=$1 path base c
  while read -r path; do
    base=${path%&cursor=DEEP}
    c=""
    for _ in $(seq $((RANDOM % 5 + 1))); do
      c=$(curl -sf "http://127.0.0.1:$port$base${c:+&cursor=$c}" | grep -o '"nextCursor":"[^"]*"' | cut -d'"' -f4 || true)
      [ -n "$c" ] || break
    done
    echo "$base${c:+&cursor=$c}"
  done < "$f" > "$f.deep" && mv "$f.deep" "$f"
}
for f in "$out"/shape-*cursor*.txt; do deepen "$f"; done
xargs -P4 -I{} sh -c 'test "$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$0{}")" = 200 && echo "{}"' "$port" \
  < "$out/pages.txt" > "$out/pages.public" || true
mv "$out/pages.public" "$out/pages.txt"
echo "$(wc -l < "$out/pages.txt") record pages the public may see"
grep -v 'cursor=DEEP' "$out/lists.txt" > "$out/lists.deep" || true
cat "$out"/shape-*cursor*.txt >> "$out/lists.deep"; mv "$out/lists.deep" "$out/lists.txt"

step 1 && echo "== 1. each list shape, one request at a time (p99, target <= 20 ms)"
step 1 && for s in "${shapes[@]}"; do
  for l in "${limits[@]}"; do
    p99=$(IDS="$out/ids.txt" PAGES="$out/pages.txt" LISTS="$out/shape-$s-$l.txt" ONLY=lists wrk -t1 -c1 -d3s --latency -s bench/mix.lua http://127.0.0.1:$port | awk '/ 99%/ {print $2}')
    echo "$s limit=$l: p99 $p99"
  done
done

mix() { IDS="$out/ids.txt" PAGES="$out/pages.txt" LISTS="$out/lists.txt" ONLY="${ONLY:-}" wrk "$@" --latency -s bench/mix.lua http://127.0.0.1:$port; }
# The server's memory: anonymous (the heap: what the memory limit and the caches' bounds govern) and
# file-backed (the directory file mapped by SQLite: the page cache, which the kernel reclaims).
rss() { awk '/RssAnon/ {a=$2} /RssFile/ {f=$2} END {printf "anonymous %d MB, file-backed %d MB", a/1024, f/1024}' /proc/$serve/status; }

if step 2; then
echo "== 2. the soak mix, 32 connections, $soak (target >= 3000 req/s, p99 <= 50 ms, memory flat)"
echo "  (answers other than 2xx and 3xx: 404 for the generated records the public may not see, 503 for lists shed)"
( while kill -0 $serve 2>/dev/null; do sleep 30; echo "  memory: $(rss)"; done ) > "$out/memory.txt" 2>&1 &
sampler=$!
mix -t2 -c32 -d"$soak" | tee "$out/wrk-soak.txt" | grep -E 'Requests/sec|p99|Non-2xx'
kill $sampler 2>/dev/null || true
cat "$out/memory.txt"

fi

if step 3; then
echo "== 3. record reads beside eight anonymous list clients at their allowed rate (target ratio >= 0.90)"
alone=$(ONLY=reads mix -t1 -c32 -d20s | awk '/Requests\/sec/ {print $2}')
for i in 1 2 3 4 5 6 7 8; do
  ( while kill -0 $serve 2>/dev/null; do
      curl -s -o /dev/null -H "X-Forwarded-For: 198.51.100.$i" "http://127.0.0.1:$port$(shuf -n1 "$out/lists.txt")"; sleep 1
    done ) &
  listers+=($!)
done
beside=$(ONLY=reads mix -t1 -c32 -d20s | awk '/Requests\/sec/ {print $2}')
kill "${listers[@]}" 2>/dev/null || true
echo "record reads alone $alone req/s, beside the list clients $beside req/s, ratio $(awk -v a="$alone" -v b="$beside" 'BEGIN {printf "%.2f", b/a}')"
fi

if step 4; then
echo "== 4. the soak mix with 2,000 connections for 30 s (no wait past the shedding bound)"
ulimit -n 65536 2>/dev/null || true
mix -t2 -c2000 -d30s --timeout 10s | grep -E 'Requests/sec|p99|Non-2xx|Socket errors'
ONLY=reads mix -t1 -c200 -d10s --timeout 10s | grep -E 'p99' | sed 's/^/brief reads beside: /' &
reads=$!
mix -t1 -c1800 -d10s --timeout 10s >/dev/null
wait $reads # not the server
fi
