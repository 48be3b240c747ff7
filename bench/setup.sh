# Sourced by the read benchmarks: checks their ports are free, builds dirsvc into bench/out, makes
# (once) a generated directory of $services services imported into bench/out/data-$services, and
# writes bench/out/ids.txt: 20,000 random services that are live and public themselves, from the
# import file.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# The server under test listens on PORT (default 8090); the scripts use a few ports above it (a copy
# server, an edge, an edge's metrics 1002 above). A server already listening there would answer the
# benchmark in place of the one it starts, and its figures would be that server's: refuse instead.
port=${PORT:-8090}
for p in $port $((port + 1)) $((port + 2)) $((port + 1002)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is in use: stop what listens there, or choose other ports with PORT=" >&2
    exit 1
  fi
done
go build -o "$out/dirsvc" ./cmd/dirsvc
source bench/wait.sh

file="$out/demo-$services.ndjson"
data="$out/data-$services"
[ -f "$file" ] || "$out/dirsvc" gen --services "$services" --seed 1 --out "$file"
if [ ! -d "$data/dirs/demo" ]; then
  rm -rf "$data"
  "$out/dirsvc" import --data "$data" "$file"
fi
grep '"kind":"service"' "$file" | grep -v '"state":' | grep -v '"audiences"' \
  | sed 's/.*"publicId":"\([^"]*\)".*/\1/' | shuf -n 20000 --random-source=<(yes) > "$out/ids.txt"
