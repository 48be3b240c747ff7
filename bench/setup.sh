# Sourced by the read benchmarks: builds dirsvc into bench/out, makes (once) a generated directory of
# $services services imported into bench/out/data-$services, and writes bench/out/ids.txt: 20,000
# random services that are live and public themselves, from the import file.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
go build -o "$out/dirsvc" ./cmd/dirsvc

file="$out/demo-$services.ndjson"
data="$out/data-$services"
[ -f "$file" ] || "$out/dirsvc" gen --services "$services" --seed 1 --out "$file"
if [ ! -d "$data/dirs/demo" ]; then
  rm -rf "$data"
  "$out/dirsvc" import --data "$data" "$file"
fi
grep '"kind":"service"' "$file" | grep -v '"state":' | grep -v '"audiences"' \
  | sed 's/.*"publicId":"\([^"]*\)".*/\1/' | shuf -n 20000 --random-source=<(yes) > "$out/ids.txt"
