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
-- when a read no longer holds, nothing written; {"time", ...} the same
-- when every read held but the decision's time is off;
-- {"gen", sec, usec, marker} when the generation marker is not the one
-- expected, nothing written. A corrupt receipt met by a trim is an error
-- starting "fencegate corrupt:", nothing written.

local now = redis.call('TIME')
local A = ARGV
local at = 6

local genKey = tonumber(A[4])
if genKey > 0 then
  local g = redis.call('GET', KEYS[genKey])
  if g ~= A[5] then
    return {'gen', now[1], now[2], g}
  end
end

local held = true
local current = {}
local nReads = tonumber(A[at])
at = at + 1
for i = 1, nReads do
  local kind, key = A[at], KEYS[tonumber(A[at + 1])]
  at = at + 2
  local cur
  if kind == 's' then
    cur = redis.call('GET', key)
  elseif kind == 'h' then
    cur = redis.call('HGET', key, A[at])
    at = at + 1
  else
    return redis.error_reply('fencegate: unknown read kind ' .. tostring(kind))
  end
  current[i] = cur
  if A[at] == '1' then
    if cur ~= A[at + 1] then held = false end
    at = at + 2
  else
    if cur then held = false end
    at = at + 1
  end
end

local timeHeld = true
if A[1] ~= '' then
  local t = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local d = tonumber(A[1])
  if d < t - tonumber(A[2]) or d > t + tonumber(A[3]) then timeHeld = false end
end
if not held or not timeHeld then
  local out = {held and 'time' or 'retry', now[1], now[2]}
  for i = 1, nReads do out[3 + i] = current[i] end
  return out
end

-- The ops, checked against the whitelist (name and argument count)
-- before anything is written; a trim's reads run before the first write
-- too.
local arity = {set = 1, del = 0, sadd = 1, srem = 1, zadd = 2, zrem = 1, hset = 2, incrby = 1, trim = 8}
local nOps = tonumber(A[at])
at = at + 1
local first = at
local trims
local function integer(v) return type(v) == 'string' and string.match(v, '^%-?%d+$') ~= nil end
for _ = 1, (nOps or 0) do
  local name, n = A[at], tonumber(A[at + 2])
  if arity[name] ~= n or not KEYS[tonumber(A[at + 1]) or 0] then
    return redis.error_reply('fencegate: op ' .. tostring(name) .. ' with ' .. tostring(n) .. ' arguments')
  end
  for j = 1, n do
    if type(A[at + 2 + j]) ~= 'string' then return redis.error_reply('fencegate: op ' .. name .. ' short of arguments') end
  end
  if (name == 'incrby' and not integer(A[at + 3])) or (name == 'zadd' and not integer(A[at + 3])) then
    return redis.error_reply('fencegate: op ' .. name .. ' with a non-integer')
  end
  if name == 'trim' then
    for j = 0, 2 do
      if not integer(A[at + 3 + j]) then return redis.error_reply('fencegate: trim with a non-integer') end
    end
    trims = trims or {}
    trims[at] = true
  end
  at = at + 3 + n
end
if nOps == nil or A[at] ~= nil then
  return redis.error_reply('fencegate: arguments do not end with the last op')
end

-- trim's reads: the oldest receipts of an index beyond keep (at most max,
-- only those below bound), each with its operation-index key and length.
-- Its arguments: keep, max, adds (receipts this step adds to the index),
-- bound (member of the first receipt to keep), receipt key prefix, ops
-- key prefix, receipt counter key, bytes key.
if trims then
  local escapes = {['%'] = '%25', [':'] = '%3A', ['{'] = '%7B', ['}'] = '%7D'}
  for pos in pairs(trims) do
    local zkey, a = KEYS[tonumber(A[pos + 1])], pos + 3
    local excess = math.min(redis.call('ZCARD', zkey) + tonumber(A[a + 2]) - tonumber(A[a]), tonumber(A[a + 1]))
    local plan = {}
    if excess > 0 then
      -- Members are fixed-width decimals, so string order is (fence, seq)
      -- order.
      for _, m in ipairs(redis.call('ZRANGE', zkey, 0, excess - 1)) do
        if m >= A[a + 3] then break end
        local f, sq = string.match(m, '^0*(%d+):0*(%d+)$')
        if not f then return redis.error_reply('fencegate corrupt: receipts index member ' .. m) end
        local rk = A[a + 4] .. f .. ':' .. sq
        local v = redis.call('GET', rk)
        if not v then return redis.error_reply('fencegate corrupt: receipts index names a missing receipt ' .. rk) end
        local ok, rc = pcall(cjson.decode, v)
        if not ok or type(rc) ~= 'table' or type(rc.operationId) ~= 'string' then
          return redis.error_reply('fencegate corrupt: receipt ' .. rk .. ' without an operation ID')
        end
        plan[#plan + 1] = {m, rk, A[a + 5] .. string.gsub(rc.operationId, '[%%:{}]', escapes), f, #v}
      end
    end
    trims[pos] = plan
  end
end

local reply = {'ok', now[1], now[2]}
at = first
for _ = 1, nOps do
  local name, key, n = A[at], KEYS[tonumber(A[at + 1])], tonumber(A[at + 2])
  if name == 'trim' then
    local plan, a, bytes = trims[at], at + 3, 0
    for _, d in ipairs(plan) do
      redis.call('DEL', d[2])
      redis.call('SREM', d[3], d[4])
      redis.call('ZREM', key, d[1])
      bytes = bytes + d[5]
      reply[#reply + 1] = d[2]
    end
    if #plan > 0 then
      redis.call('INCRBY', A[a + 6], string.format('%d', -#plan))
      redis.call('INCRBY', A[a + 7], string.format('%d', -bytes))
    end
  elseif n == 0 then
    redis.call(name, key)
  elseif n == 1 then
    redis.call(name, key, A[at + 3])
  else
    redis.call(name, key, A[at + 3], A[at + 4])
  end
  at = at + 3 + n
end
return reply
