-- wrk script: the soak mix. Each request is, at random, a brief service read (50%), a record page
-- (25%: a service, location or organisation in full) or a service list with random filters and
-- limit (25%, from the LISTS file), each asked for in identity, gzip or br (a third each).
-- Optional: ONLY=reads|lists narrows the mix; FROM=N sets X-Forwarded-For to one of N addresses.
local function lines(path)
  local t = {}
  for line in io.lines(path) do t[#t + 1] = line end
  return t
end
local ids = lines(os.getenv("IDS"))
local pages = lines(os.getenv("PAGES"))
local lists = lines(os.getenv("LISTS"))
local only = os.getenv("ONLY") or ""
local encodings = {"identity", "gzip", "br"}
math.randomseed(os.time() + math.floor(os.clock() * 1000000))
request = function()
  local r = math.random()
  local path
  if only == "lists" or (only == "" and r >= 0.75) then
    path = lists[math.random(#lists)]
  elseif r < 0.5 or only == "reads" then
    path = "/v1/d/demo/services/" .. ids[math.random(#ids)] .. "?view=brief"
  else
    path = pages[math.random(#pages)]
  end
  return wrk.format("GET", path, {["Accept-Encoding"] = encodings[math.random(3)]})
end
done = function(summary, latency, requests)
  io.write(string.format("p50 %.2fms p99 %.2fms errors(status) %d timeouts %d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status, summary.errors.timeout))
end
