-- The compare-and-write step of store/redis (step.go builds its arguments
-- and reads its reply; see the package comment, "One implementation of
-- the acceptance rules"). It decides nothing: Go decided on the values it
-- expects, and this script checks that the server still holds them, that
-- the decision was made at the server's time (within a bound), and only
-- then applies the buffered writes. All or nothing: every check and every
-- read that can fail runs before the first write.
--
-- ARGV, read in order (KEYS[i] are the keys the arguments name by index):
--   decided   the decision's time in Unix microseconds, "" for none
--   behind    how far the decision may lag TIME, in microseconds
--   ahead     how far it may lead TIME, in microseconds
--   genKey    index of the generation marker's key, 0 for no check
--   genWant   the marker expected (when genKey > 0)
--   nReads, then per read: kind ("s" GET, "h" HGET), key index, field
--           (kind "h" only), "1" present + its value, or "0" absent
--   nOps, then per op: name, key index, argument count, arguments
--
-- Replies: {"ok", sec, usec, deleted receipt key...} once applied;
-- {"retry", sec, usec, current value of each read...} (nil for absent)
-- when a read no longer holds or the time is off, nothing written;
-- {"gen", sec, usec, marker} when the generation marker is not the one
-- expected, nothing written. A corrupt receipt met by a trim is an error
-- starting "fencegate corrupt:", nothing written.

local now = redis.call('TIME')
local at = 1
local function arg()
  local v = ARGV[at]
  at = at + 1
  return v
end

local decided = arg()
local behind = tonumber(arg())
local ahead = tonumber(arg())
local genKey = tonumber(arg())
local genWant = arg()
if genKey > 0 then
  local g = redis.call('GET', KEYS[genKey])
  if g ~= genWant then
    return {'gen', now[1], now[2], g}
  end
end

local held = true
local current = {}
local nReads = tonumber(arg())
for i = 1, nReads do
  local kind = arg()
  local key = KEYS[tonumber(arg())]
  local cur
  if kind == 's' then
    cur = redis.call('GET', key)
  elseif kind == 'h' then
    cur = redis.call('HGET', key, arg())
  else
    return redis.error_reply('fencegate: unknown read kind ' .. tostring(kind))
  end
  current[i] = cur
  if arg() == '1' then
    if cur ~= arg() then held = false end
  elseif cur then
    held = false
  end
end

if decided ~= '' then
  local t = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local d = tonumber(decided)
  if d < t - behind or d > t + ahead then held = false end
end
if not held then
  local out = {'retry', now[1], now[2]}
  for i = 1, nReads do out[3 + i] = current[i] end
  return out
end

-- The ops, checked against the whitelist before anything is written.
local arity = {set = 1, del = 0, sadd = 1, srem = 1, zadd = 2, zrem = 1, hset = 2, incrby = 1, trim = 8}
local ops = {}
local nOps = tonumber(arg())
for i = 1, nOps do
  local name = arg()
  local key = KEYS[tonumber(arg())]
  local n = tonumber(arg())
  if arity[name] ~= n then
    return redis.error_reply('fencegate: op ' .. tostring(name) .. ' with ' .. tostring(n) .. ' arguments')
  end
  local args = {}
  for j = 1, n do args[j] = arg() end
  ops[i] = {name, key, args}
end

-- A receipt's operation ID escaped as store/redis escapes key segments.
local escapes = {['%'] = '%25', [':'] = '%3A', ['{'] = '%7B', ['}'] = '%7D'}
local function escape(s)
  return (string.gsub(s, '[%%:{}]', escapes))
end

-- trim's reads: the oldest receipts of an index beyond keep (at most max,
-- only those below bound), each with its operation-index key and length.
-- args: keep, max, adds (receipts this step adds to the index), bound
-- (member of the first receipt to keep), receipt key prefix, ops key
-- prefix, receipt counter key, bytes key.
local function planTrim(zkey, a)
  local keep, max, adds = tonumber(a[1]), tonumber(a[2]), tonumber(a[3])
  local excess = math.min(redis.call('ZCARD', zkey) + adds - keep, max)
  local plan = {}
  if excess <= 0 then return plan end
  for _, m in ipairs(redis.call('ZRANGE', zkey, 0, excess - 1)) do
    if m >= a[4] then break end
    local f, s = string.match(m, '^0*(%d+):0*(%d+)$')
    if not f then return nil, 'receipts index member ' .. m end
    local rk = a[5] .. f .. ':' .. s
    local v = redis.call('GET', rk)
    if not v then return nil, 'receipts index names a missing receipt ' .. rk end
    local ok, rc = pcall(cjson.decode, v)
    if not ok or type(rc) ~= 'table' or type(rc.operationId) ~= 'string' then
      return nil, 'receipt ' .. rk .. ' without an operation ID'
    end
    plan[#plan + 1] = {m, rk, a[6] .. escape(rc.operationId), f, #v}
  end
  return plan
end

local trims = {}
for i, op in ipairs(ops) do
  if op[1] == 'trim' then
    local plan, err = planTrim(op[2], op[3])
    if not plan then return redis.error_reply('fencegate corrupt: ' .. err) end
    trims[i] = plan
  end
end

local deleted = {'ok', now[1], now[2]}
for i, op in ipairs(ops) do
  local name, key, a = op[1], op[2], op[3]
  if name == 'trim' then
    local bytes = 0
    for _, d in ipairs(trims[i]) do
      redis.call('DEL', d[2])
      redis.call('SREM', d[3], d[4])
      redis.call('ZREM', key, d[1])
      bytes = bytes + d[5]
      deleted[#deleted + 1] = d[2]
    end
    if #trims[i] > 0 then
      redis.call('INCRBY', a[7], string.format('%d', -#trims[i]))
      redis.call('INCRBY', a[8], string.format('%d', -bytes))
    end
  else
    redis.call(name, key, unpack(a))
  end
end
return deleted
