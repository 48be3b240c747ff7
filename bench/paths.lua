-- wrk script: GET a random path of the PATHS file, with "Authorization: Bearer $TOKEN" when TOKEN is
-- set; prints the 95th percentile latency when done.
local paths = {}
for line in io.lines(os.getenv("PATHS")) do paths[#paths + 1] = line end
local token = os.getenv("TOKEN")
local headers = {}
if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
math.randomseed(os.time())
request = function()
  return wrk.format("GET", paths[math.random(#paths)], headers)
end
done = function(summary, latency, requests)
  io.write(string.format("p95 %.2fms\n", latency:percentile(95) / 1000))
end
