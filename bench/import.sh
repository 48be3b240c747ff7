#!/usr/bin/env bash
# Import benchmark: `dirsvc import` of a generated directory into an empty data
# folder, then of re-importing the same file (a no-op): elapsed and CPU time, peak RSS, and the
# time of each step of the import (parse, records, indexes, narrowing, feed, search, commits).
#
#   bench/import.sh [SERVICES]      default 100000 (target: at most 30 s)
set -euo pipefail
cd "$(dirname "$0")/.."
services=${1:-100000}
out=bench/out
mkdir -p "$out"
go build -o "$out/dirsvc" ./cmd/dirsvc
file="$out/demo-$services.ndjson"
[ -f "$file" ] || "$out/dirsvc" gen --services "$services" --seed 1 --out "$file"
echo "file: $(wc -l < "$file") lines, $(du -h "$file" | cut -f1)"
rm -rf "$out/import-data"
# CPU time (user plus system, every thread) is printed beside the elapsed time: on a machine shared
# with other work it is the steadier figure. The load average says how shared it was.
for pass in first again; do
  uptime
  # At the debug level the import also logs how long each of its steps took.
  DIRSVC_LOG_LEVEL=debug /usr/bin/time -f "$pass import: %e s elapsed, %U s user + %S s system CPU, %M KB peak RSS" \
    "$out/dirsvc" import --data "$out/import-data" "$file" 2>&1 | tail -3
done
