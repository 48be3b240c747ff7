#!/usr/bin/env bash
# FHIR benchmarks on a generated 100,000-service directory, over loopback, all in one run:
#   1. reads of random HealthcareService resources (public tier) as a ratio to the static-bytes
#      handler of bench/read.sh (bench/plain), measured in turn, five rounds, with their median;
#   2. first search pages HealthcareService?service-type=T&address-postalcode=P&_count=20 for random
#      (type, postcode) pairs of the directory's services: latency percentiles (wrk, one connection);
#   3. paging every HealthcareService with _count=100 from the first page to the last
#      (bench/fhirpage, which reads a page's entries while it asks for the next; the server makes
#      each next page while the client reads the one it has): resources per second, on a first pass
#      (every resource mapped) and a second (every resource in the server's cache).
# The machine's load average is printed beside the figures: they are indicative on a shared host.
#
#   bench/fhir.sh [SERVICES] [DURATION]      defaults: 100000 services, 10s per server and round
services=${1:-100000}
duration=${2:-10s}
source "$(dirname "$0")/setup.sh"
go build -o "$out/plain" ./bench/plain
go build -o "$out/fhirpage" ./bench/fhirpage

"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port --base-url http://localhost:$port \
  --anonymous-per-minute 1000000000 --anonymous-per-day 1000000000 2>"$out/serve.log" &
serve=$!
trap 'kill $serve $plain 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:$port
"$out/plain" --from http://127.0.0.1:$port --ids "$out/ids.txt" --kept "$out/kept.txt" --addr 127.0.0.1:$((port + 1)) &
plain=$!
until curl -sf -o /dev/null "http://127.0.0.1:$((port + 1))/v1/d/demo/services/$(head -1 "$out/kept.txt" 2>/dev/null)"; do sleep 0.2; done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"

echo "== 1. FHIR read vs static bytes"
rps() { IDS="$out/kept.txt" wrk -t1 -c32 -d"$duration" --latency -s "$1" "$2" | tee "$out/wrk-$3.txt" | awk '/Requests\/sec/ {print $2}'; }
IDS="$out/kept.txt" wrk -t1 -c32 -d5s -s bench/fhir_read.lua http://127.0.0.1:$port >/dev/null
ratios=()
for round in 1 2 3 4 5; do
  real=$(rps bench/fhir_read.lua http://127.0.0.1:$port "fhir-$round")
  base=$(rps bench/random_ids.lua http://127.0.0.1:$((port + 1)) "plain-$round")
  ratio=$(awk -v a="$real" -v b="$base" 'BEGIN {printf "%.2f", a/b}')
  ratios+=("$ratio")
  echo "round $round: FHIR read $real req/s (p99 $(awk '/ 99%/ {print $2}' "$out/wrk-fhir-$round.txt")), static $base req/s, ratio $ratio (target >= 0.5); load $(cut -d' ' -f1 /proc/loadavg)"
done
echo "read ratios: lowest $(printf '%s\n' "${ratios[@]}" | sort -n | head -1), median $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n 3p) (target >= 0.5)"

echo "== 2. first search page"
# (type, postcode) pairs of public services, from the import file: a service's type and its site's postcode.
python3 - "$file" > "$out/fhir-queries.txt" <<'PY'
import json, random, sys
loc, pairs = {}, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "location" and r.get("address", {}).get("postcode"):
        loc[r["publicId"]] = r["address"]["postcode"]
    elif r.get("kind") == "service" and r.get("location") and "audiences" not in r and "state" not in r:
        pairs.append((r["type"], r["location"]))
random.seed(1)
for t, l in random.sample(pairs, min(2000, len(pairs))):
    if l in loc:
        print(f"/v1/d/demo/fhir/HealthcareService?service-type={t}&address-postalcode={loc[l]}&_count=20")
PY
QUERIES="$out/fhir-queries.txt" wrk -t1 -c1 -d"$duration" -s bench/fhir_search.lua http://127.0.0.1:$port | grep -E 'search latency|Requests/sec'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== 3. paging every HealthcareService, _count=100"
# Twice: the first pass maps every resource (a cold server), the second finds them in the server's
# cache of mapped resources (a server that has served them before).
for pass in cold warm; do
  echo -n "$pass: "
  "$out/fhirpage" --base http://127.0.0.1:$port --public-base http://localhost:$port \
    --path "/v1/d/demo/fhir/HealthcareService?_count=100"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (target >= 40,000 resources/s)"
