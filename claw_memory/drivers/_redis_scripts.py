"""Lua sources of :class:`~claw_memory.drivers.redis.RedisMemory`. The layout they keep is in
``docs/redis-layout.md``.

Every script touches the keys of one namespace only, all named ``<prefix>{<namespace>}:…`` and so
in one cluster hash slot. ``KEYS[1]`` is always the namespace's recency set ``<base>o`` (which
also routes the call on a cluster); the other names are built from its ``<base>`` part: the
value ``<base>v:<key>``, the word sets ``<base>t:<word>``, the indexed words ``<base>i``, the
index mark ``<base>w``. Few arguments matter: each one costs the client time on every call.
Scores of the recency set are microseconds and reach ``redis.call`` as numbers, as the
strings Redis itself returned, or as the digits of ``TIME`` joined; never as a Lua number
concatenated into a string (Lua would print it with 14 digits only).
"""

from __future__ import annotations

from typing import Final

__all__ = ["ALL", "ENTRIES", "FLUSH", "FORGET", "LIVE", "RESTORE", "SEARCH", "SET"]

_PRELUDE: Final = """
local recency = KEYS[1]
local base = string.sub(recency, 1, -2)

-- Remove one entry: its value, its recency, and the word-set memberships it was indexed under.
-- The member '' (never a valid key) keeps the highest recency handed out, removed entries'
-- included, so the recency handed out next still exceeds every one before (see SET).
local function drop(key)
  local indexed = redis.call('HGET', base .. 'i', key)
  if indexed then
    for w in string.gmatch(indexed, '%S+') do redis.call('SREM', base .. 't:' .. w, key) end
    redis.call('HDEL', base .. 'i', key)
  end
  local score = redis.call('ZSCORE', recency, key)
  if score then
    redis.call('ZADD', recency, 'GT', score, '')
    redis.call('ZREM', recency, key)
  end
  redis.call('UNLINK', base .. 'v:' .. key)
end
"""

#: KEYS: recency. ARGV: key, value JSON, then the TTL in ms when the entry expires. The common
#: path is three commands (four when the clock stepped back) and defines no Lua functions
#: (creating closures shows in the time of a set).
SET: Final = """
local t = redis.call('TIME')
-- Microseconds as the digits themselves: ZADD would otherwise format a Lua number (%.17g).
local now = t[1] .. string.format('%06d', t[2])
local name = string.sub(KEYS[1], 1, -2) .. 'v:' .. ARGV[1]
if ARGV[3] then
  redis.call('SET', name, ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', name, ARGV[2])
end
-- The member '' holds the highest recency handed out so far. When the clock is past it, one
-- ZADD moves both '' and the key to now (both change: 2). Otherwise (the clock stepped back,
-- or a second set in the same microsecond) the key takes that highest recency plus one, so
-- recency only ever grows and never falls behind the index mark.
if redis.call('ZADD', KEYS[1], 'GT', 'CH', now, '', now, ARGV[1]) < 2 then
  redis.call('ZADD', KEYS[1], redis.call('ZINCRBY', KEYS[1], 1, ''), ARGV[1])
end
-- One set in 16 looks at 32 members (a window at a random rank, wrapping round) and removes
-- those whose value has expired: expired members are met at least twice as fast as new ones
-- arrive, which bounds their number. A window costs far less than ZRANDMEMBER, and one EXISTS
-- over it tells whether any member needs a closer look.
if now % 16 == 0 then
""" + _PRELUDE + """
  local size = redis.call('ZCARD', recency)
  local members
  if size <= 32 then
    members = redis.call('ZRANGE', recency, 0, -1)
  else
    local start = math.floor(now / 16) % size
    members = redis.call('ZRANGE', recency, start, start + 31)
    if start + 32 > size then
      for _, k in ipairs(redis.call('ZRANGE', recency, 0, start + 31 - size)) do
        members[#members + 1] = k
      end
    end
  end
  local sample, names = {}, {}
  for _, k in ipairs(members) do
    if k ~= '' then
      sample[#sample + 1] = k
      names[#names + 1] = base .. 'v:' .. k
    end
  end
  if #names > 0 and redis.call('EXISTS', unpack(names)) < #names then
    for j, k in ipairs(sample) do
      if redis.call('EXISTS', names[j]) == 0 then drop(k) end
    end
  end
end
return 1
"""

#: KEYS: recency. ARGV: key.
FORGET: Final = _PRELUDE + """
drop(ARGV[1])
return 1
"""

#: KEYS: recency. Returns key, value, key, value, … oldest first.
ALL: Final = _PRELUDE + """
local out = {}
local batch = {}
local function fetch()
  local names = {}
  for j, k in ipairs(batch) do names[j] = base .. 'v:' .. k end
  local values = redis.call('MGET', unpack(names))
  for j, k in ipairs(batch) do
    if values[j] then
      out[#out + 1] = k
      out[#out + 1] = values[j]
    else
      drop(k)
    end
  end
  batch = {}
end
for _, k in ipairs(redis.call('ZRANGE', recency, 0, -1)) do
  if k ~= '' then
    batch[#batch + 1] = k
    if #batch == 512 then fetch() end
  end
end
if #batch > 0 then fetch() end
return out
"""

#: KEYS: recency. Returns the server time in ms, then key, value, stored-at score and remaining
#: ms (-1 = never) of each live entry, oldest first.
ENTRIES: Final = _PRELUDE + """
local t = redis.call('TIME')
local out = {t[1] * 1000 + math.floor(t[2] / 1000)}
local members = redis.call('ZRANGE', recency, 0, -1, 'WITHSCORES')
for j = 1, #members, 2 do
  local k = members[j]
  if k ~= '' then
    local name = base .. 'v:' .. k
    local value = redis.call('GET', name)
    if value then
      out[#out + 1] = k
      out[#out + 1] = value
      out[#out + 1] = members[j + 1]
      -- The absolute expiry where the server has PEXPIRETIME (Redis 7), else now + PTTL.
      local ok, at = pcall(redis.call, 'PEXPIRETIME', name)
      if not ok then
        at = redis.call('PTTL', name)
        if at >= 0 then at = out[1] + at end
      end
      out[#out + 1] = at
    else
      drop(k)
    end
  end
end
return out
"""

#: KEYS: recency. ARGV: (key, value JSON, absolute expiry in UNIX ms or 0 = never) triples.
#: Writes them in order, each the newest of the namespace, as SET would.
RESTORE: Final = _PRELUDE + """
local t = redis.call('TIME')
local score = t[1] * 1000000 + t[2]
local last = redis.call('ZRANGE', recency, -1, -1, 'WITHSCORES')[2]
if last and tonumber(last) >= score then score = tonumber(last) + 1 end
for j = 1, #ARGV, 3 do
  local name = base .. 'v:' .. ARGV[j]
  if ARGV[j + 2] ~= '0' then
    redis.call('SET', name, ARGV[j + 1], 'PXAT', ARGV[j + 2])
  else
    redis.call('SET', name, ARGV[j + 1])
  end
  redis.call('ZADD', recency, score, ARGV[j])
  score = score + 1
end
if #ARGV > 0 then redis.call('ZADD', recency, 'GT', score - 1, '') end
return 1
"""

#: KEYS: recency. Returns 1 when the namespace has a live entry.
LIVE: Final = _PRELUDE + """
for _, k in ipairs(redis.call('ZRANGE', recency, 0, -1)) do
  if k ~= '' then
    if redis.call('EXISTS', base .. 'v:' .. k) == 1 then return 1 end
    drop(k)
  end
end
return 0
"""

#: KEYS: recency. ARGV: upper score ('' on the first call), batch size. Returns {more, upper
#: score}: the client repeats with the returned score until more is 0, so entries set after
#: the flush began are kept.
FLUSH: Final = _PRELUDE + """
local upto = ARGV[1]
local size = tonumber(ARGV[2])
if upto == '' then
  upto = redis.call('ZRANGE', recency, -1, -1, 'WITHSCORES')[2]
  if not upto then
    redis.call('DEL', base .. 'w')
    return {0, ''}
  end
end
local batch = redis.call('ZRANGEBYSCORE', recency, '-inf', upto, 'LIMIT', 0, size)
for _, k in ipairs(batch) do
  if k ~= '' then drop(k) end
end
if #batch < size then
  -- Nothing but the '' member left: nothing was set meanwhile, the namespace starts afresh.
  local left = redis.call('ZCARD', recency)
  if left == 0 or (left == 1 and redis.call('ZSCORE', recency, '')) then
    redis.call('DEL', recency, base .. 'w')
  end
  return {0, upto}
end
return {1, upto}
"""

#: KEYS: recency. ARGV: limit, batch size, batch bytes, n, n query words, then (key, score,
#: words) for each entry the client tokenised since its previous call. Returns {0, key, score,
#: value, …}: entries to tokenise first (call again with them), or {1, key, value, word count,
#: recency, …}: the hits, best first. ``<base>q`` and ``<base>b`` are scratch space.
SEARCH: Final = _PRELUDE + """
local indexed_words, mark = base .. 'i', base .. 'w'
local scratch, bucket = base .. 'q', base .. 'b'
local limit, n = tonumber(ARGV[1]), tonumber(ARGV[4])
local first_word = 5

-- Bring the word sets of one entry from the words it was indexed under to ``words``.
local function reindex(key, words)
  local indexed = redis.call('HGET', indexed_words, key)
  local stale = {}
  if indexed then
    for w in string.gmatch(indexed, '%S+') do stale[w] = true end
  end
  for w in string.gmatch(words, '%S+') do
    if stale[w] then
      stale[w] = nil
    else
      redis.call('SADD', base .. 't:' .. w, key)
    end
  end
  for w in pairs(stale) do redis.call('SREM', base .. 't:' .. w, key) end
  if words ~= '' then
    redis.call('HSET', indexed_words, key, words)
  elseif indexed then
    redis.call('HDEL', indexed_words, key)
  end
end

-- 1. Apply the words the client computed. An entry set again since it was sent out has a
-- higher score now and is still ahead of the mark, so it comes back in step 2.
local high, high_text = nil, nil
for j = first_word + n, #ARGV, 3 do
  local key, score = ARGV[j], ARGV[j + 1]
  local current = redis.call('ZSCORE', recency, key)
  if current and tonumber(current) == tonumber(score) then reindex(key, ARGV[j + 2]) end
  if not high or tonumber(score) > high then high, high_text = tonumber(score), score end
end
if high then
  local previous = redis.call('GET', mark)
  if not previous or tonumber(previous) < high then redis.call('SET', mark, high_text) end
end

-- 2. Entries set since the mark have not been indexed yet: send them out for tokenising.
-- Expired ones are removed on the way; a batch that held only those is followed by the next.
local from = redis.call('GET', mark)
from = from and ('(' .. from) or '-inf'
local batch, budget = tonumber(ARGV[2]), tonumber(ARGV[3])
local out, bytes, full = {0}, 0, false
repeat
  local pending = redis.call('ZRANGEBYSCORE', recency, from, '+inf', 'WITHSCORES',
    'LIMIT', 0, batch)
  full = #pending == 2 * batch
  for j = 1, #pending, 2 do
    local k = pending[j]
    if k ~= '' then
      local value = redis.call('GET', base .. 'v:' .. k)
      if value then
        out[#out + 1] = k
        out[#out + 1] = pending[j + 1]
        out[#out + 1] = value
        bytes = bytes + #value
        if bytes >= budget then break end
      else
        drop(k)
      end
    end
  end
until #out > 1 or not full
if #out > 1 then return out end

-- 3. Count, per entry, the query words its value holds (one set per word), then walk the
-- counts from the highest down, each count's entries newest first.
local hits = {1}
if n == 0 then return hits end
redis.call('DEL', scratch)
for j = first_word, first_word + n - 1, 1000 do
  local names = {}
  for m = j, math.min(j + 999, first_word + n - 1) do
    names[#names + 1] = base .. 't:' .. ARGV[m]
  end
  redis.call('ZUNIONSTORE', scratch, #names + 1, scratch, unpack(names))
end
local found = 0
local count = redis.call('ZREVRANGE', scratch, 0, 0, 'WITHSCORES')[2]
while count and found < limit do
  redis.call('ZRANGESTORE', bucket, scratch, count, count, 'BYSCORE')
  redis.call('ZINTERSTORE', bucket, 2, bucket, recency, 'WEIGHTS', 0, 1)
  local position = 0
  while found < limit do
    local page = redis.call('ZREVRANGE', bucket, position, position + limit - found - 1,
      'WITHSCORES')
    if #page == 0 then break end
    position = position + #page / 2
    for j = 1, #page, 2 do
      local k = page[j]
      local value = redis.call('GET', base .. 'v:' .. k)
      if value then
        hits[#hits + 1] = k
        hits[#hits + 1] = value
        hits[#hits + 1] = count
        hits[#hits + 1] = page[j + 1]
        found = found + 1
      else
        drop(k)
      end
    end
  end
  count = redis.call('ZREVRANGEBYSCORE', scratch, '(' .. count, '-inf', 'WITHSCORES',
    'LIMIT', 0, 1)[2]
end
redis.call('DEL', scratch, bucket)
return hits
"""
