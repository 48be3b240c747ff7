-- wrk script: GET a random first search page of the QUERIES file (one path a line), and report the
-- latency's 50th, 95th and 99th percentiles and the answers that were not 200.
local paths = {}
for line in io.lines(os.getenv("QUERIES")) do paths[#paths + 1] = line end
math.randomseed(os.time())
local bad = 0
request = function()
  return wrk.format("GET", paths[math.random(#paths)])
end
response = function(status, headers, body)
  if status ~= 200 then bad = bad + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format("search latency p50 %.2f ms, p95 %.2f ms, p99 %.2f ms; %d requests, %d errors\n",
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000,
    summary.requests, summary.errors.status))
end
