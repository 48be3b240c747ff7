#!/usr/bin/env bash
# Change-feed benchmark (issue 12): a harvester reads the whole change feed of a generated directory
# of 100,000 services, served by `dirsvc serve` over loopback, from its oldest event to its end,
# pages of 500, each page from the cursor the last gave (bench/feedharvest). A partner client with
# feed:read and practitioners:read reads it, without expand and with expand=entity, in interleaved
# rounds (other work on the machine moves the figures: compare within a run).
# Targets: at least 200,000 items/s without expand, 50,000 items/s with expand=entity.
#
#   bench/feed.sh [SERVICES] [ROUNDS]      defaults: 100000 services, 3 rounds
services=${1:-100000}
rounds=${2:-3}
source "$(dirname "$0")/setup.sh"
go build -o "$out/feedharvest" ./bench/feedharvest

client=$("$out/dirsvc" clients --data "$data" create --name "Feed harvest" --partner --directory demo --tier partner \
  --scopes "feed:read practitioners:read" --per-minute 1000000000 --per-day 1000000000)
id=$(echo "$client" | sed 's/.*"clientId":"\([^"]*\)".*/\1/')
secret=$(echo "$client" | sed 's/.*"clientSecret":"\([^"]*\)".*/\1/')

"$out/dirsvc" serve --data "$data" --addr 127.0.0.1:$port 2>"$out/feed-serve.log" &
serve=$!
trap 'kill $serve 2>/dev/null || true; "$out/dirsvc" clients --data "$data" revoke "$id" >/dev/null 2>&1 || true' EXIT
wait_ready 127.0.0.1:$port
# The first read opens the directory (and migrates a folder made by an older version).
curl -sf --max-time 600 -o /dev/null http://127.0.0.1:$port/v1/d/demo/developers
token=$(curl -sf -u "$id:$secret" -d grant_type=client_credentials -d directory=demo http://127.0.0.1:$port/oauth/token \
  | sed 's/.*"access_token":"\([^"]*\)".*/\1/')

echo "== change feed harvest, $services services, pages of 500 (targets: >= 200,000 items/s; >= 50,000 with expand=entity)"
"$out/feedharvest" -token "$token" -limit 500 >/dev/null # warm the file cache
for round in $(seq "$rounds"); do
  echo "round $round, plain:  $("$out/feedharvest" -token "$token" -limit 500)"
  echo "round $round, expand: $("$out/feedharvest" -token "$token" -limit 500 -expand)"
done
