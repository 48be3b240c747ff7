#!/usr/bin/env bash
# CORS cost benchmark: requests/s of `dirsvc serve` with CORS as a ratio to the same server without
# it, on the load of bench/read.sh (GET services/{id}?view=brief, public tier, random IDs of a
# generated directory, over loopback), each request with an Origin header as a browser sends it. Both
# servers run side by side on copies of the same import and are read in turn by wrk with the same
# settings, the order swapped every round, in one run of this script; it prints each round's ratio,
# their geometric mean and their median.
#
#   bench/cors.sh [SERVICES] [DURATION] [ROUNDS]    defaults: 100000 services, 10s, 6 rounds
#
# The server with CORS is built from the working tree. The one without is built from the same tree
# with the middleware taken out of the handler chain (edge/server.go), so that the two differ by CORS
# alone; or, with WITHOUT set to a commit (the one before CORS, say), from that commit, whose server
# then differs by everything since.
services=${1:-100000}
duration=${2:-10s}
rounds=${3:-6}
source "$(dirname "$0")/setup.sh"

src="$out/without-src"
data_without="$out/data-without-$services"
rm -rf "$src"
mkdir -p "$src"
if [ -n "${WITHOUT:-}" ]; then
  rev=$(git rev-parse --verify "$WITHOUT^{commit}")
  echo "with CORS: the working tree; without: commit $WITHOUT ($rev)"
  git archive "$rev" | tar -x -C "$src"
else
  echo "with CORS: the working tree; without: the working tree with the CORS middleware unwired"
  git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -c 2>/dev/null | tar -x -C "$src"
  grep -q 's.handler = s.cors(' "$src/edge/server.go" || { echo "edge/server.go does not put s.cors first in the chain" >&2; exit 1; }
  sed -i 's/s\.handler = s\.cors(\(.*\))$/s.handler = \1/' "$src/edge/server.go"
fi
(cd "$src" && go build -o ../dirsvc-without ./cmd/dirsvc)
rm -rf "$src"

if [ -n "${WITHOUT:-}" ]; then
  # The older binary imports the file into a folder of its own: it may not know a newer schema.
  if [ "$(cat "$data_without/.rev" 2>/dev/null)" != "$rev" ]; then
    rm -rf "$data_without"
    "$out/dirsvc-without" import --data "$data_without" "$file"
    echo "$rev" > "$data_without/.rev"
  fi
else
  rm -rf "$data_without"
  cp -a "$data" "$data_without"
fi

limits=(--anonymous-per-minute 1000000000 --anonymous-per-day 1000000000)
"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port "${limits[@]}" 2>"$out/serve-cors.log" &
with_pid=$!
"$out/dirsvc-without" serve --data "$data_without" --addr 127.0.0.1:$((port + 1)) "${limits[@]}" 2>"$out/serve-without.log" &
without_pid=$!
trap 'kill $with_pid $without_pid 2>/dev/null || true' EXIT
wait_ready 127.0.0.1:$port
wait_ready 127.0.0.1:$((port + 1))

# What is measured is what it says: the one server grants any origin, the other none.
id=$(head -1 "$out/ids.txt")
origin="Origin: https://app.example"
granted() { curl -sf -o /dev/null -D - -H "$origin" "http://$1/v1/d/demo/services/$id?view=brief" | grep -ci '^access-control-allow-origin: \*' || true; }
if [ "$(granted 127.0.0.1:$port)" != 1 ] || [ "$(granted 127.0.0.1:$((port + 1)))" != 0 ]; then
  echo "the server with CORS must grant any origin once and the one without none" >&2
  exit 1
fi

rps() { IDS="$out/ids.txt" wrk -t1 -c32 -d"$duration" --latency -H "$origin" -s bench/random_ids.lua "http://$1" | tee "$out/wrk-$2.txt" | awk '/Requests\/sec/ {print $2}'; }
echo "== warm-up"
for p in $port $((port + 1)); do IDS="$out/ids.txt" wrk -t1 -c32 -d5s -H "$origin" -s bench/random_ids.lua "http://127.0.0.1:$p" >/dev/null; done
# This machine's speed drifts, and the server read second in a round tends to do better than the one
# read first: the servers are measured in turn, the first of a round alternating (an even number of
# rounds cancels that order in the geometric mean), and each round's ratio is reported.
(( rounds % 2 == 0 )) || echo "an odd number of rounds favours the server read second in more of them" >&2
ratios=()
for round in $(seq 1 "$rounds"); do
  if (( round % 2 )); then
    with=$(rps 127.0.0.1:$port "cors-$round")
    base=$(rps 127.0.0.1:$((port + 1)) "without-$round")
  else
    base=$(rps 127.0.0.1:$((port + 1)) "without-$round")
    with=$(rps 127.0.0.1:$port "cors-$round")
  fi
  ratio=$(awk -v a="$with" -v b="$base" 'BEGIN {printf "%.3f", a/b}')
  ratios+=("$ratio")
  echo "round $round: with CORS $with req/s (p99 $(awk '/ 99%/ {print $2}' "$out/wrk-cors-$round.txt")), without $base req/s (p99 $(awk '/ 99%/ {print $2}' "$out/wrk-without-$round.txt")), ratio $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{r[NR] = $1; l += log($1)}
  END {m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "ratio with/without CORS over %d rounds: geometric mean %.3f, median %.3f, from %.3f to %.3f (1.000 is no cost; the spread is the noise)\n", NR, exp(l / NR), m, r[1], r[NR]}'
