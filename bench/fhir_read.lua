-- wrk script: GET a random service of the IDS file as a FHIR HealthcareService.
local ids = {}
for line in io.lines(os.getenv("IDS")) do ids[#ids + 1] = (line:gsub("_", "-")) end
local dir = os.getenv("DIR") or "demo"
math.randomseed(os.time())
request = function()
  return wrk.format("GET", "/v1/d/" .. dir .. "/fhir/HealthcareService/" .. ids[math.random(#ids)])
end
