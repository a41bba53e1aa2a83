-- A Lua workload for scripts/bench: tables, strings, closures and sorting, all
-- allocation-heavy. Usage: lua5.4 bench/heap.lua N (work grows linearly with N). Prints a
-- checksum that does not depend on the machine.
local n = tonumber(arg[1]) or 20000
local seed = 12345
local function rnd()
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed >> 16
end
local recs, words = {}, {}
for i = 1, n do
  local t = {}
  for j = 1, 3 + rnd() % 8 do t[j] = string.char(97 + rnd() % 26) end
  local w = table.concat(t)
  words[w] = (words[w] or 0) + 1
  recs[i] = { id = i, name = w, tags = { rnd() % 100, rnd() % 100, rnd() % 100 } }
end
table.sort(recs, function(a, b)
  if a.name ~= b.name then return a.name < b.name end
  return a.id < b.id
end)
local sum = 0
for _, r in ipairs(recs) do sum = (sum * 31 + r.id + r.tags[2]) % 1000000007 end
local parts = {}
for i, r in ipairs(recs) do parts[i] = r.name:upper() .. ":" .. tostring(r.tags[1]) end
local text = table.concat(parts, " ")
local pairs2 = 0
for _ in text:gmatch("[AEIOU][AEIOU]") do pairs2 = pairs2 + 1 end
local distinct = 0
for _ in pairs(words) do distinct = distinct + 1 end
local memo = {}
local function fib(k)
  if k < 2 then return k end
  local key = "f" .. k
  if memo[key] then return memo[key] end
  local v = (fib(k - 1) + fib(k - 2)) % 1000000007
  memo[key] = v
  return v
end
print(string.format("words %d sum %d pairs %d len %d fib %d", distinct, sum, pairs2, #text,
  fib(200)))
