/**
 * The Lua scripts of `redisPresence()`: the rules of `lib/broadcast/presence_table.ts`, rule for
 * rule, run atomically by Redis, each publishing its net change once on the channel.
 *
 * Every script takes the key prefix as `ARGV[1]` and one declared key, `<prefix>v` (so a cluster
 * client routes it to the prefix's slot; every other key shares the prefix's hash tag). Keys:
 *
 * - `<p>t:<tag>` HASH ref → `{"k":key,"m":metaJson,"n":node,"p":peer,"g":untilMs|0,"s":n}`, where
 *   `s` numbers the entries in order of creation (`<p>n` counts them): adoption takes the oldest;
 * - `<p>tags` SET of the tags that have entries;
 * - `<p>g` HASH `<len(tag)>:<tag><key>` → JSON array of the refs of that key in grace;
 * - `<p>gz` ZSET `<len(tag)>:<tag><ref>` scored by the end of its grace;
 * - `<p>o:<node>` SET `<len(tag)>:<tag><ref>` of the entries the node owns;
 * - `<p>nodes` ZSET node → its last heartbeat (Redis `TIME`, ms);
 * - `<p>epoch` the id of this data set's life, `<p>v` the batch version;
 * - channel `<p>diffs`: `{"v":"<n>","n":node,"c":{tag:{"j":{key:{ref:meta}},"l":{key:[ref]}}},
 *   "mv":[[tag,ref,node,peer,key]]}` (an empty map or list may be written `{}`).
 *
 * The version starts at Redis's clock in ms times 1024 when `<p>v` is missing, so after Redis
 * lost its data every node sees a skipped version on the next batch and reloads. It travels as a
 * string: cjson writes numbers with 14 digits.
 *
 * Private to `lib/stores/`.
 *
 * @module
 */

/**
 * The heartbeat of a node that applied after it was reaped, and before its next beat: older than
 * any live node's, so the next beat reaps it, and not 0, the heartbeat of a node that closed.
 */
const REAPED_BEAT = 1;

const PRELUDE = `
local P = ARGV[1]
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function member(tag, s) return #tag .. ':' .. tag .. s end
local function split(m)
  local n, rest = string.match(m, '^(%d+):(.*)$')
  n = tonumber(n)
  return string.sub(rest, 1, n), string.sub(rest, n + 1)
end
local function rowOf(tag, ref)
  local raw = redis.call('HGET', P .. 't:' .. tag, ref)
  if raw then return cjson.decode(raw) end
  return nil
end
local function putRow(tag, ref, row)
  redis.call('HSET', P .. 't:' .. tag, ref, cjson.encode(row))
  redis.call('SADD', P .. 'tags', tag)
end
local function version()
  local v = redis.call('GET', P .. 'v')
  if v then return tonumber(v) end
  local origin = nowMs() * 1024
  redis.call('SET', P .. 'v', string.format('%d', origin))
  return origin
end
local function own(node, tag, ref)
  if node ~= '' then redis.call('SADD', P .. 'o:' .. node, member(tag, ref)) end
end
local function disown(node, tag, ref)
  if node ~= '' then redis.call('SREM', P .. 'o:' .. node, member(tag, ref)) end
end
local function graceAdd(tag, key, ref, untilMs)
  local f = member(tag, key)
  local raw = redis.call('HGET', P .. 'g', f)
  local refs = raw and cjson.decode(raw) or {}
  local found = false
  for _, r in ipairs(refs) do if r == ref then found = true end end
  if not found then
    refs[#refs + 1] = ref
    redis.call('HSET', P .. 'g', f, cjson.encode(refs))
  end
  redis.call('ZADD', P .. 'gz', untilMs, member(tag, ref))
end
local function graceDel(tag, key, ref)
  local f = member(tag, key)
  local raw = redis.call('HGET', P .. 'g', f)
  if raw then
    local keep = {}
    for _, r in ipairs(cjson.decode(raw)) do if r ~= ref then keep[#keep + 1] = r end end
    if #keep == 0 then redis.call('HDEL', P .. 'g', f)
    else redis.call('HSET', P .. 'g', f, cjson.encode(keep)) end
  end
  redis.call('ZREM', P .. 'gz', member(tag, ref))
end
local function delRow(tag, ref, row)
  redis.call('HDEL', P .. 't:' .. tag, ref)
  if redis.call('EXISTS', P .. 't:' .. tag) == 0 then redis.call('SREM', P .. 'tags', tag) end
  if row.g ~= 0 then graceDel(tag, row.k, ref) end
  disown(row.n, tag, ref)
end
-- The oldest entry of key in grace (the first the table would find), as its ref.
local function adoptable(tag, key)
  local raw = redis.call('HGET', P .. 'g', member(tag, key))
  if not raw then return nil end
  local found, oldest = nil, nil
  for _, r in ipairs(cjson.decode(raw)) do
    local row = rowOf(tag, r)
    if row and row.g ~= 0 and row.k == key and (not oldest or row.s < oldest) then
      found, oldest = r, row.s
    end
  end
  return found
end
-- One batch: the before-image of every ref it touched, in order, and the moves.
local touched, order, moved = {}, {}, {}
local function touch(tag, ref, row)
  local id = member(tag, ref)
  if touched[id] == nil then
    touched[id] = row and { k = row.k, m = row.m } or false
    order[#order + 1] = { tag, ref, id }
  end
end
-- The net change: nothing (0), or the new version, published once.
local function finish(origin)
  local changes, any = {}, false
  for _, t in ipairs(order) do
    local tag, ref, before = t[1], t[2], touched[t[3]]
    local after = rowOf(tag, ref)
    local same = before and after and before.m == after.m and before.k == after.k
    if not same and (before or after) then
      local c = changes[tag]
      if not c then
        c = { j = {}, l = {} }
        changes[tag] = c
      end
      if before then
        local l = c.l[before.k] or {}
        l[#l + 1] = ref
        c.l[before.k] = l
      end
      if after then
        local j = c.j[after.k] or {}
        j[ref] = after.m
        c.j[after.k] = j
      end
      any = true
    end
  end
  if not any and #moved == 0 then return 0 end
  version()
  local v = redis.call('INCR', P .. 'v')
  redis.call('PUBLISH', P .. 'diffs', cjson.encode({
    v = string.format('%d', v), n = origin, c = changes, mv = moved,
  }))
  return v
end
-- The whole table: { epoch, version, tag, ref, row, tag, ref, row, ... }.
local function snapshot()
  local reply = { redis.call('GET', P .. 'epoch') or '', string.format('%d', version()) }
  for _, tag in ipairs(redis.call('SMEMBERS', P .. 'tags')) do
    local all = redis.call('HGETALL', P .. 't:' .. tag)
    for i = 1, #all, 2 do
      reply[#reply + 1] = tag
      reply[#reply + 1] = all[i]
      reply[#reply + 1] = all[i + 1]
    end
  end
  return reply
end
`;

/**
 * ARGV: prefix, node, ops as JSON, the Redis time (ms) from which the call must not be applied
 * (0: none). Replies { the new version (0: nothing changed, -1: too late, not applied), Redis's
 * time in ms, the batch's moves as the channel's `mv` or `""` when there are none }.
 *
 * A node that was reaped (absent from `<p>nodes`) but applies before its next beat is entered
 * with the heartbeat {@linkcode REAPED_BEAT}, as long dead: what it writes now is in its `o:` set,
 * so the next beat of any node reaps it should it never beat again, as the table removes the
 * entries of a node it does not know at every reap; and its own next beat still finds it reaped.
 */
export const APPLY_SCRIPT: string = `${PRELUDE}
local node = ARGV[2]
local now, expiresAt = nowMs(), tonumber(ARGV[4])
if expiresAt > 0 and now >= expiresAt then return { -1, now, '' } end
if not redis.call('ZSCORE', P .. 'nodes', node) then
  redis.call('ZADD', P .. 'nodes', ${REAPED_BEAT}, node)
end
for _, op in ipairs(cjson.decode(ARGV[3])) do
  local tag = op.tag
  if op.op == 'track' then
    local ref = op.ref
    local row = rowOf(tag, ref)
    if not row then
      local adopted = adoptable(tag, op.key)
      if adopted then
        ref = adopted
        row = rowOf(tag, ref)
      end
    end
    touch(tag, ref, row)
    if row then
      if row.n ~= node or row.p ~= op.peer then
        moved[#moved + 1] = { tag, ref, node, op.peer, row.k }
      end
      if row.g ~= 0 then graceDel(tag, row.k, ref) end
      if row.n ~= node then disown(row.n, tag, ref) end
      row.n, row.p, row.m, row.g = node, op.peer, op.meta, 0
    else
      row = { k = op.key, m = op.meta, n = node, p = op.peer, g = 0, s = redis.call('INCR', P .. 'n') }
    end
    putRow(tag, ref, row)
    own(node, tag, ref)
  elseif op.op == 'grace' then
    local row = rowOf(tag, op.ref)
    if row and row.n == node then
      if op.untilMs == 0 then
        if row.g ~= 0 then graceDel(tag, row.k, op.ref) end
      else
        graceAdd(tag, row.k, op.ref, op.untilMs)
      end
      row.g = op.untilMs
      if op.orphan then
        disown(node, tag, op.ref)
        row.n = ''
      end
      putRow(tag, op.ref, row)
    end
  elseif op.op == 'leave' then
    local row = rowOf(tag, op.ref)
    if row and row.n == node then
      touch(tag, op.ref, row)
      delRow(tag, op.ref, row)
    end
  end
end
local v = finish(node)
return { v, now, #moved > 0 and cjson.encode(moved) or '' }
`;

/**
 * ARGV: prefix, node, deadAfterMs, the epoch the node knows, a new epoch should there be none.
 * Marks the node alive at Redis's time, removes what nodes silent longer than deadAfterMs own
 * (each such node is removed with it, so it is reaped once) and every entry whose grace ended
 * while its owner is an orphan's `""` or not alive. Replies { status, epoch, version or 0 }:
 * status `RESET` when the epoch is missing or not the one the node knows, `REAPED` when the
 * node was not alive (absent, or entered by an apply after it was reaped), `OK` otherwise.
 */
export const BEAT_SCRIPT: string = `${PRELUDE}
local node, deadAfter = ARGV[2], tonumber(ARGV[3])
local now = nowMs()
local status = 'OK'
local epoch = redis.call('GET', P .. 'epoch')
if not epoch then
  epoch = ARGV[5]
  redis.call('SET', P .. 'epoch', epoch)
  status = 'RESET'
elseif epoch ~= ARGV[4] then
  status = 'RESET'
else
  local beat = redis.call('ZSCORE', P .. 'nodes', node)
  if not beat or tonumber(beat) == ${REAPED_BEAT} then status = 'REAPED' end
end
redis.call('ZADD', P .. 'nodes', now, node)
local cutoff = '(' .. string.format('%d', now - deadAfter)
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', P .. 'nodes', '-inf', cutoff)) do
  for _, m in ipairs(redis.call('SMEMBERS', P .. 'o:' .. dead)) do
    local tag, ref = split(m)
    local row = rowOf(tag, ref)
    if row and row.n == dead and (row.g == 0 or row.g <= now) then
      touch(tag, ref, row)
      delRow(tag, ref, row)
    end
  end
  redis.call('DEL', P .. 'o:' .. dead)
  redis.call('ZREM', P .. 'nodes', dead)
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', P .. 'gz', '-inf', string.format('%d', now))) do
  redis.call('ZREM', P .. 'gz', m)
  local tag, ref = split(m)
  local row = rowOf(tag, ref)
  if row and row.g ~= 0 and row.g <= now
    and (row.n == '' or not redis.call('ZSCORE', P .. 'nodes', row.n)) then
    touch(tag, ref, row)
    delRow(tag, ref, row)
  end
end
return { status, epoch, finish(node) }
`;

/**
 * ARGV: prefix, node, a new epoch should there be none. Marks the node alive and replies the
 * snapshot: { epoch, version, tag, ref, row, ... }.
 */
export const OPEN_SCRIPT: string = `${PRELUDE}
redis.call('SET', P .. 'epoch', ARGV[3], 'NX')
redis.call('ZADD', P .. 'nodes', nowMs(), ARGV[2])
return snapshot()
`;

/** ARGV: prefix. Replies the snapshot: { epoch, version, tag, ref, row, ... }. */
export const LOAD_SCRIPT: string = `${PRELUDE}
return snapshot()
`;

/**
 * ARGV: prefix, node. The node's heartbeat is set to 0, so the next beat of any node removes
 * what it still owns (as a node silent too long), as the table forgets a closed node.
 */
export const CLOSE_SCRIPT: string = `${PRELUDE}
redis.call('ZADD', P .. 'nodes', 0, ARGV[2])
return 1
`;
