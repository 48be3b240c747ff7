#!/usr/bin/env bash
# Export benchmark: records per second of each export format, and peak RSS of an export of every
# format, with `dirsvc export` (partner tier, practitioners included) on generated directories.
#
#   bench/export.sh [SERVICES...]      default 10000 100000
#   FORMATS=fhir-ndjson bench/export.sh 100000     only the formats named (space separated runs)
#
# A data folder per size is kept in bench/out (bench/out/data-N, made once with gen and import).
# Targets: at least 100,000 records/s per format at 100,000 services; peak RSS flat in size (the
# 100,000-service export within 50 MB of the 10,000-service one).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then sizes=("$@"); else sizes=(10000 100000); fi
out=bench/out
mkdir -p "$out"
go build -o "$out/dirsvc" ./cmd/dirsvc
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${sizes[@]}"; do
  data="$out/data-$n"
  if [ ! -d "$data" ]; then
    "$out/dirsvc" gen --services "$n" --seed 1 --out "$out/demo-$n.ndjson"
    "$out/dirsvc" import --data "$data" "$out/demo-$n.ndjson" 2>/dev/null
  fi
  for formats in ${FORMATS:-csv json fhir-ndjson hsds csv,json,fhir-ndjson,hsds}; do
    dest=$(mktemp -d "$out/export-XXXXXX")
    rmdir "$dest"
    log=$( { /usr/bin/time -f "TIME %e %U %S %M" "$out/dirsvc" export --data "$data" --out "$dest" \
      --formats "$formats" --practitioners demo >/dev/null; } 2>&1 )
    rm -rf "$dest"
    records=$(sed -n 's/^exported \([0-9]*\) records in .*/\1/p' <<<"$log")
    read -r wall user sys rss < <(sed -n 's/^TIME //p' <<<"$log")
    awk -v n="$n" -v f="$formats" -v r="$records" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" 'BEGIN {
      printf "%7d services  %-28s %7d records  %6.2f s wall (%6.2f s CPU)  %8.0f records/s wall  %8.0f records/s CPU  peak RSS %4.0f MB\n",
        n, f, r, w, u + s, r / w, r / (u + s), m / 1024 }'
  done
done
