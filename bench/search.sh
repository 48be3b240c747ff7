#!/usr/bin/env bash
# Search benchmark: a fixed, mixed query set against GET search/services on a generated directory of
# 100,000 services served by `dirsvc serve` over loopback (wrk from Debian's packages). Each class of
# query runs alone with 8 connections, then all of them mixed:
#   text        words only (types, specialties, organisation words)
#   place       words + near + radiusKm=25 + two filters
#   open        openNow=true with words
#   group       group=organisation with words
#   typo        misspelt words (spelling correction on)
# Targets (issue 11): p50 at most 5 ms, p95 at most 20 ms, at least 500 requests/s. Then GET
# autocomplete with the first letters of words as typed (types, places, organisations): target p95
# at most 5 ms. The same query classes against Bleve v2 on the same documents, in process:
# bench/bleve (README.md there).
#
#   bench/search.sh [SERVICES] [SECONDS]      defaults: 100000 services, 15 s a class
services=${1:-100000}
secs=${2:-15}
source "$(dirname "$0")/setup.sh"

# A directory imported by an earlier build lacks search documents: import it again.
if ! sqlite3 -version >/dev/null 2>&1 || [ "$(sqlite3 "$data/dirs/demo/directory.db" 'SELECT search_filled FROM projection' 2>/dev/null)" != 1 ]; then
  rm -rf "$data" && "$out/dirsvc" import --data "$data" "$file"
fi

# Places: positions of generated sites, spread over the country.
mapfile -t points < <(grep -m 20000 '"kind":"location"' "$file" | grep -o '"point":{"lat":[-0-9.]*,"lon":[-0-9.]*}' \
  | sed 's/"point":{"lat":\([-0-9.]*\),"lon":\([-0-9.]*\)}/\1,\2/' | shuf -n 200 --random-source=<(yes))
words=(gp dental physiotherapy pharmacy "mental health" psychology counselling "youth mental" clinic medical
  "aged care" "community health" hospital podiatry "speech pathology" dentist "after hours" womens children family)
typos=(physiotherapi dentl pharmcy psycology councelling clinc medcal hospitl podiatory childrens)
filters=("cost=bulk_billed&delivery=in_person" "appointment=not_required&referral=self" "delivery=telehealth&cost=free"
  "language=en&delivery=in_person" "cost=fees&appointment=required")
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
enc() { echo "${1// /+}"; }
: > "$out/search-all.txt"
for class in text place open group typo; do
  f="$out/search-$class.txt"
  : > "$f"
  for _ in $(seq 200); do
    case $class in
      text) q="q=$(enc "$(pick "${words[@]}")")" ;;
      place) q="q=$(enc "$(pick "${words[@]}")")&near=$(pick "${points[@]}")&radiusKm=25&$(pick "${filters[@]}")" ;;
      open) q="q=$(enc "$(pick "${words[@]}")")&openNow=true" ;;
      group) q="q=$(enc "$(pick "${words[@]}")")&group=organisation" ;;
      typo) q="q=$(pick "${typos[@]}")" ;;
    esac
    echo "/v1/d/demo/search/services?$q" | tee -a "$out/search-all.txt" >> "$f"
  done
done
# Autocomplete: each word of the query sets and some places, cut after 1 to 6 letters.
typed=("${words[@]}" sydney melbourne brisbane perth adelaide hobart darwin canberra geelong newcastle wollongong ballarat)
: > "$out/autocomplete.txt"
for _ in $(seq 400); do
  w=$(pick "${typed[@]}")
  echo "/v1/d/demo/autocomplete?q=$(enc "${w:0:$((1 + RANDOM % 6))}")" >> "$out/autocomplete.txt"
done

"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port \
  --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/search-serve.log" &
serve=$!
trap 'kill $serve 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:$port
# Ready: the documents, each tier's vocabulary and autocomplete list are loaded. One search of each
# kind all the same before the measures (each must answer 200).
curl -sf -o /dev/null "http://127.0.0.1:$port/v1/d/demo/search/services?q=gp"
curl -sf -o /dev/null "http://127.0.0.1:$port/v1/d/demo/search/services?q=clinc"
curl -sf -o /dev/null "http://127.0.0.1:$port/v1/d/demo/autocomplete?q=g"

run() { PATHS="$1" wrk -t1 -c8 -d"${secs}s" --latency -s bench/paths.lua http://127.0.0.1:$port \
  | awk '/ 50%/ {p50=$2} / 90%/ {p90=$2} /^p95/ {p95=$2} /Requests\/sec/ {rps=$2} /Non-2xx/ {bad=$NF}
         END {printf "p50 %s p90 %s p95 %s, %s req/s, non-2xx %s\n", p50, p90, p95, rps, bad ? bad : 0}'; }
echo "== search, $services services, 8 connections, ${secs} s a class (targets: p50 <= 5 ms, p95 <= 20 ms, >= 500 req/s)"
for class in text place open group typo; do
  echo "$class: $(run "$out/search-$class.txt")"
done
echo "mixed: $(run "$out/search-all.txt")"
echo "== autocomplete, 8 connections, ${secs} s (target: p95 <= 5 ms)"
echo "autocomplete: $(run "$out/autocomplete.txt")"
