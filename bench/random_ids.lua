-- wrk script: GET a random service of the IDS file in its brief view.
local ids = {}
for line in io.lines(os.getenv("IDS")) do ids[#ids + 1] = line end
local dir = os.getenv("DIR") or "demo"
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/v1/d/" .. dir .. "/services/" .. ids[math.random(#ids)] .. "?view=brief")
end
