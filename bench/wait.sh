# Sourced by the benchmarks that start a node: wait_ready HOST:PORT [SECONDS] polls the node's
# public /healthz until it answers 200 (healthy and ready: every directory it serves open and its
# search index loaded), and fails after SECONDS (default 600) with what the node last answered. A
# benchmark measures a ready node, never one still warming (searches wait for the load, lists run
# several times slower meanwhile).
wait_ready() {
  local addr=$1 limit=${2:-600} start=$SECONDS
  until curl -sf -o /dev/null "http://$addr/healthz"; do
    if (( SECONDS - start >= limit )); then
      echo "$addr was not ready within ${limit} s: $(curl -s "http://$addr/healthz")" >&2
      return 1
    fi
    sleep 0.2
  done
}

# wait_until SECONDS WHAT COMMAND... runs COMMAND every half second until it succeeds, and fails
# after SECONDS saying WHAT was awaited.
wait_until() {
  local limit=$1 what=$2 start=$SECONDS
  shift 2
  until "$@"; do
    if (( SECONDS - start >= limit )); then
      echo "$what: not within ${limit} s" >&2
      return 1
    fi
    sleep 0.5
  done
}
