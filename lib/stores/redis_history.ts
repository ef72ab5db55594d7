/**
 * The broadcast history on Redis Streams, as `redisHistory`: the {@linkcode History} store that
 * lets a dialer whose node died recover what it missed on another node, when the dialer has
 * `recovery: recovery()` (from `@muxws/core`).
 *
 * Each tag has two keys, both holding the tag as a cluster hash tag so they share a slot:
 * `<prefix>{<tag>}:log`, a stream whose entry ids are `<seq>-0`, and `<prefix>{<tag>}:seq`, a
 * hash with the tag's last sequence number (`seq`) and the id of this counter's life (`epoch`).
 * Every method is one Lua script (`EVALSHA`, or `EVAL` when Redis lacks it), so an append is
 * atomic across nodes and a range reads the log and the counter at one instant. The layout is
 * documented in `docs/backplane.md`.
 *
 * @module
 */
import type {
  History,
  HistoryEntry,
  HistoryRange,
  HistoryRetention,
} from '../broadcast/history.ts';
import { describe } from '../util/describe.ts';
import {
  DEFAULT_MAX_AGE_MS,
  DEFAULT_MAX_ENTRIES,
  isTag,
  MAX_TAG_LENGTH,
  seqOrigin,
} from '../broadcast/store_kit.ts';
import { MuxwsError, TimeoutError } from '../errors.ts';
import {
  digestOf,
  evalScript,
  fromBase64,
  isNoScript,
  messageOf,
  toBase64,
} from './_redis_shared.ts';

/**
 * What the history needs of a Redis client: node-redis's `eval(script, { keys, arguments })`
 * (a cluster client has it too and sends each call to the slot of its keys), and optionally its
 * `evalSha` and `isReady`.
 */
export interface RedisScriptClient {
  /**
   * Optional. True while the client is connected and can run commands (node-redis has it). When
   * it is false, every call rejects at once instead of waiting in the client's offline queue.
   */
  readonly isReady?: boolean;
  /** Runs a Lua script; resolves with its reply (arrays, integers and strings as node-redis reads them). */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /**
   * Optional. Runs the script Redis holds under this SHA1 (hex), rejecting with a `NOSCRIPT`
   * error when it holds none. With it, once a script ran as `EVAL`, calls send its 40-character
   * digest instead of its body (about 2.4 KB). After a `NOSCRIPT` (Redis restarted, flushed its
   * scripts, or a cluster node that never ran it), the refused call ran nothing and is sent
   * again. Appends to one tag keep the order of their calls: once every append of the tag in
   * flight has answered, the refused ones are sent again in call order (the first as `EVAL`,
   * which loads the script), and later appends of the tag wait behind them. Only an append
   * refused while a later one of its tag was applied rejects (another client loaded the script
   * in between): sent again, it would take a higher seq than the later one.
   */
  evalSha?(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** Options of {@linkcode redisHistory}. */
export interface RedisHistoryOptions extends HistoryRetention {
  /** A connected client; the history runs its scripts on it and never closes it. */
  client: RedisScriptClient;
  /**
   * The start of every key, so that several applications can share one Redis.
   *
   * @default {'muxws:history:'}
   */
  prefix?: string;
  /**
   * The clock each entry's time is read from, in milliseconds since the epoch; injectable for
   * tests.
   *
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * How long a call waits for Redis before it rejects with a `TimeoutError`, so a Redis that is
   * restarting or unreachable never makes the acceptor wait for long.
   *
   * @default {5000}
   */
  commandTimeoutMs?: number;
}

/** What {@linkcode RedisHistory.range} read: a {@linkcode HistoryRange} and the counter's epoch. */
export interface RedisHistoryRange extends HistoryRange {
  /**
   * The id of the counter's life: drawn when the tag's counter is created, kept while it exists.
   * A different epoch than before means the counter was lost (Redis restarted without
   * persistence, or the key was deleted) and sequence numbers started again from the clock.
   * Empty when the tag has no counter.
   */
  readonly epoch: string;
}

/** The store {@linkcode redisHistory} returns. */
export interface RedisHistory extends History {
  /** The start of every key of this store. */
  readonly prefix: string;
  /** Resolves with up to `limit` entries of `tag` after `after`, with the counter's epoch. */
  range(tag: string, after: number, limit: number): Promise<RedisHistoryRange>;
}

// The scripts. Each keeps the log contiguous: an entry is written before the counter moves, the
// counter never goes below the log's last id, and trimming only ever removes the oldest entries.
// Entry times never decrease along the log (an append stores the later of its clock and the last
// entry's time), so "older than maxAgeMs" is always a prefix of the log, found by bisection.

const SCRIPT_HELPERS = `
local function field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end
local function seqOf(id)
  return tonumber(string.match(id, '^%d+'))
end
local function at(log, seq)
  return redis.call('XRANGE', log, string.format('%d-0', seq), '+', 'COUNT', 1)[1]
end
local function timeOf(entry)
  return tonumber(field(entry[2], 't'))
end
local function last(log)
  return redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)[1]
end
-- The seq of the first entry at or after seq 'from' whose time is at least 'cutoff', or nil.
local function firstFresh(log, from, cutoff)
  local first = at(log, from)
  if not first then return nil end
  if timeOf(first) >= cutoff then return seqOf(first[1]) end
  local newest = last(log)
  if timeOf(newest) < cutoff then return nil end
  -- The entry at or after lo is too old, the one at or after hi is not.
  local lo, hi = seqOf(first[1]), seqOf(newest[1])
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if timeOf(at(log, mid)) >= cutoff then hi = mid else lo = mid end
  end
  return seqOf(at(log, hi)[1])
end
-- The tag's head: the counter, or the log's last id when the counter is gone but the log is not.
local function headOf(log, counter)
  local seq = tonumber(redis.call('HGET', counter, 'seq')) or 0
  local newest = last(log)
  if newest then seq = math.max(seq, seqOf(newest[1])) end
  if seq == 0 and redis.call('EXISTS', log) == 1 then
    seq = seqOf(field(redis.call('XINFO', 'STREAM', log), 'last-generated-id'))
  end
  return seq, newest
end
`;

/**
 * KEYS: log, counter. ARGV: now, maxEntries, maxAgeMs, epoch if new, kind, data, the Redis time
 * after which the append must not be applied (0: none), and the first seq if new (drawn from
 * `now`). Replies the seq (0: not applied, too late) and Redis's time in milliseconds.
 */
const APPEND_SCRIPT = `${SCRIPT_HELPERS}
local log, counter = KEYS[1], KEYS[2]
local clock = redis.call('TIME')
local redisMs = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local expiresAt = tonumber(ARGV[7])
if expiresAt > 0 and redisMs >= expiresAt then return { 0, redisMs } end
local seq, newest = headOf(log, counter)
local time = tonumber(ARGV[1])
if newest then time = math.max(time, timeOf(newest)) end
if seq == 0 then
  -- No counter and no log: the first number comes from the clock, above any Redis lost.
  seq = tonumber(ARGV[8])
  redis.call('HSET', counter, 'origin', string.format('%d', seq))
else
  seq = seq + 1
end
redis.call('XADD', log, 'MAXLEN', '~', ARGV[2], string.format('%d-0', seq),
  't', string.format('%d', time), 'k', ARGV[5], 'd', ARGV[6])
redis.call('HSET', counter, 'seq', string.format('%d', seq))
redis.call('HSETNX', counter, 'epoch', ARGV[4])
local fresh = firstFresh(log, 0, tonumber(ARGV[1]) - tonumber(ARGV[3]))
if fresh then redis.call('XTRIM', log, 'MINID', string.format('%d-0', fresh)) end
redis.call('PEXPIRE', log, ARGV[3])
return { seq, redisMs }
`;

/** KEYS: log, counter. ARGV: after, limit, cutoff time, maxEntries. Replies head, epoch, gap, entries. */
const RANGE_SCRIPT = `${SCRIPT_HELPERS}
local log, counter = KEYS[1], KEYS[2]
local head = headOf(log, counter)
local after, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local reset = after > head
local from = math.max(after, head - tonumber(ARGV[4]))
local origin = tonumber(redis.call('HGET', counter, 'origin')) or 1
local reply = { head, redis.call('HGET', counter, 'epoch') or '', 0 }
local fresh = not reset and firstFresh(log, from + 1, tonumber(ARGV[3]))
local firstSeq = nil
if fresh then
  local entries = redis.call('XRANGE', log, string.format('%d-0', fresh), '+', 'COUNT', limit)
  for _, entry in ipairs(entries) do
    local seq = seqOf(entry[1])
    firstSeq = firstSeq or seq
    reply[#reply + 1] = seq
    reply[#reply + 1] = field(entry[2], 'k')
    reply[#reply + 1] = field(entry[2], 'd')
  end
end
-- The counter's first number follows position 0 without a gap (rangeGap() in lib/broadcast/store_kit.ts).
if reset or (after < head and firstSeq ~= after + 1 and not (after == 0 and firstSeq == origin)) then
  reply[3] = 1
end
return reply
`;

/** KEYS: log, counter. */
const HEAD_SCRIPT = `${SCRIPT_HELPERS}
return (headOf(KEYS[1], KEYS[2]))
`;

/** One append, from its call until it settles. */
interface Flight {
  /** Its place among the calls of its tag. */
  readonly order: number;
  /** The script's arguments before the deadline, which each send computes. */
  readonly args: string[];
  /** The script's last argument: the first seq should the tag have no counter, from the call's clock. */
  readonly origin: string;
  /** `performance.now()` at the call: the append is bounded by `commandTimeoutMs` from it. */
  readonly calledAt: number;
  /**
   * Waiting behind a re-send, sent and not answered, refused with NOSCRIPT and waiting to be sent
   * again, or settled (its caller was told).
   */
  state: 'waiting' | 'sent' | 'refused' | 'settled';
  /** Whether it was last sent as EVALSHA. */
  bySha: boolean;
  /** What Redis said when it refused it. */
  refusal: unknown;
  /** Clears its timer and settles its caller's promise. */
  settle(outcome: { reply: unknown } | { error: unknown }): void;
}

/** The appends of one tag that have not settled, in the order of their calls. */
interface Lane {
  /** The order the next call takes. */
  next: number;
  /** The unsettled appends, in call order. */
  readonly flights: Flight[];
  /** The highest order of an append Redis applied, or may have (it timed out while sent); -1 for none. */
  applied: number;
  /** From a NOSCRIPT until the refused appends were sent again and answered: calls wait meanwhile. */
  holding: boolean;
}

/** The kind field of an entry: its data as given (text) or as base64 (bytes). */
const TEXT = 's';
const BYTES = 'b';

/** Throws a `TypeError` for a non-number, a `RangeError` for a number that is not a safe integer of at least `min`. */
function checkInteger(what: string, name: string, value: unknown, min: number): void {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min) return;
  const message = `${what} as "${name}" must be an integer of at least ${min}: current value is ${
    describe(value)
  }`;
  throw typeof value === 'number' ? new RangeError(message) : new TypeError(message);
}

/**
 * A {@linkcode History} on Redis Streams, shared by every acceptor node that uses
 * the same Redis and prefix: sequence numbers increase across nodes, and a dialer recovers on
 * any of them.
 *
 * `append` is one script: it writes the entry with the id `<seq>-0` (so the stream is in
 * sequence order), moves the counter, trims by count (`MAXLEN ~ maxEntries`) and by age (`XTRIM
 * MINID` before the first entry younger than `maxAgeMs`), and sets the log to expire `maxAgeMs`
 * after its last append. Redis trims by count in whole blocks, so it may hold somewhat more than
 * `maxEntries`; `range` still never returns more than the last `maxEntries` nor anything older
 * than `maxAgeMs` on `now`, and reports `gap` when what it skipped was asked for. The counter
 * never expires (a dialer connected through a quiet spell keeps its position valid); delete both
 * keys to forget a tag.
 *
 * A tag with no counter and no log starts at `floor(now) * 1024 + 1` (see {@linkcode History}),
 * on the `now` of the node that appends first, and the counter keeps that first number
 * (`origin`). So when Redis lost the keys (restarted without persistence, flushed), numbers
 * continue above the old ones: a dialer connected through it keeps receiving broadcasts, and one
 * that redials is replayed the new log with `gap: true`. The number comes from the node's clock,
 * not Redis's `TIME`, so that it is the clock entry ages are measured on and tests can inject
 * it; nodes' clocks disagree by far less than the time a counter lives before it is lost, and
 * that difference only has to stay below the counter's age for the new numbers to be above the
 * old. With persistence (`appendonly yes`), a restart keeps the counter and numbers simply go on.
 *
 * `range(tag, after, limit)` reports `gap: true` when the first entry after `after` is gone
 * while `after` is below the head (after 0, the counter's first number is not a gap), and when
 * `after` is above the head (Redis lost the counter and nothing was appended since); then no
 * entries are returned (as `memoryHistory()` does: the head is the caller's position now), and
 * the `epoch` differs from the one read before.
 *
 * Data round-trips exactly: text is stored as given, bytes as base64 (a text of lone UTF-16
 * surrogates cannot cross Redis; JSON codecs never produce one). Each call rejects with a
 * `MuxwsError` naming the tag and what Redis said when a command fails, with a `TimeoutError`
 * after `commandTimeoutMs`, and at once when the client's `isReady` is false. An append that
 * timed out is never applied later, when the client delivers it after a reconnect: the script
 * compares Redis's clock with the deadline the append was sent with (Redis's clock is estimated
 * from each append's answer, so the first append of a store is not fenced). After Redis lost its
 * scripts (a restart, `SCRIPT FLUSH`), appends refused with `NOSCRIPT` are sent again in the order
 * of their calls (see {@linkcode RedisScriptClient.evalSha}) with the deadline of their call, so a
 * call still waits at most `commandTimeoutMs` in all and one that timed out is never applied. With node-redis,
 * `disableOfflineQueue: true` makes calls fail at once while the client knows it is
 * disconnected instead of waiting for the timeout.
 *
 * @param options The client, the key prefix, the retention, the clock and the command timeout.
 * @returns The store, to pass as the acceptor's `history`.
 * @throws {TypeError} When `client` has no `eval()` method, `prefix` is not a string, `now` is
 * not a function, or a number option is not a number.
 * @throws {RangeError} When `maxAgeMs`, `maxEntries` or `commandTimeoutMs` is not a positive
 * integer.
 *
 * @example Two nodes share one log (needs a Redis server)
 * ```ts ignore
 * import { createClient } from 'redis';
 * import { redisHistory } from '@muxws/core/redis';
 * import assert from 'node:assert/strict';
 *
 * const a = createClient({ url: 'redis://127.0.0.1:6379', disableOfflineQueue: true });
 * const b = a.duplicate();
 * a.on('error', () => {});
 * b.on('error', () => {});
 * await Promise.all([a.connect(), b.connect()]);
 *
 * const nodeA = redisHistory({ client: a, maxAgeMs: 60_000 });
 * const nodeB = redisHistory({ client: b, maxAgeMs: 60_000 });
 * const first = await nodeA.append('room', '{"text":"hi"}');
 * const second = await nodeB.append('room', new Uint8Array([1, 2, 3]));
 * assert.equal(second, first + 1);
 * const { entries, gap, head } = await nodeB.range('room', first - 1, 100);
 * assert.deepEqual(entries.map((entry) => entry.seq), [first, second]);
 * assert.deepEqual(entries[1].data, new Uint8Array([1, 2, 3]));
 * assert.equal(head, second);
 * // new Acceptor({ history: nodeA, ... }) on node A, nodeB on node B
 * ```
 */
export function redisHistory(options: RedisHistoryOptions): RedisHistory {
  const what = 'Cannot create redisHistory';
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `${what} as "options" must be an object: current value is ${describe(options)}`,
    );
  }
  const {
    client,
    prefix = 'muxws:history:',
    maxAgeMs = DEFAULT_MAX_AGE_MS,
    maxEntries = DEFAULT_MAX_ENTRIES,
    now = Date.now,
    commandTimeoutMs = 5000,
  } = options;
  if (client === null || typeof client !== 'object') {
    throw new TypeError(
      `${what} as "client" must be a Redis client: current value is ${describe(client)}`,
    );
  }
  if (typeof client.eval !== 'function') {
    throw new TypeError(
      `${what} as "client" must have an eval() method: current value is ${
        describe((client as unknown as Record<string, unknown>).eval)
      }`,
    );
  }
  if (typeof prefix !== 'string') {
    throw new TypeError(
      `${what} as "prefix" must be a string: current value is ${describe(prefix)}`,
    );
  }
  if (typeof now !== 'function') {
    throw new TypeError(`${what} as "now" must be a function: current value is ${describe(now)}`);
  }
  checkInteger(what, 'maxAgeMs', maxAgeMs, 1);
  checkInteger(what, 'maxEntries', maxEntries, 1);
  checkInteger(what, 'commandTimeoutMs', commandTimeoutMs, 1);

  /**
   * Redis's clock minus `performance.now()`, estimated from the last append's reply as if Redis
   * had run it when the answer arrived: never above the true offset, so the deadline it gives is
   * never later than the true one (an on-time append is refused only when it took about
   * `commandTimeoutMs` to reach Redis, which its own timeout would have reported). It turns "commandTimeoutMs after sending" into a Redis time, so
   * an append that timed out here and reached Redis later (a client sends what it queued on a
   * connection it had not yet seen die once it reconnects) is never applied: its broadcast was
   * reported as not logged, and a late entry would be replayed to peers that had it live.
   * Unknown until the first append answers; re-estimated from every answer, so clock steps heal.
   */
  let redisOffsetMs: number | undefined;
  /** The scripts this store's client ran as EVAL, so Redis holds them: sent as EVALSHA next. */
  const loaded = new Set<string>();
  /**
   * The unsettled appends per tag. Pipelined appends of a tag are applied in the order of their
   * calls, as one connection runs its commands in order; a NOSCRIPT breaks that unless the
   * refused ones are sent again, in order, before anything later of the tag.
   */
  const lanes = new Map<string, Lane>();
  for (const script of [APPEND_SCRIPT, RANGE_SCRIPT, HEAD_SCRIPT]) digestOf(script);

  function keys(tag: string): string[] {
    return [`${prefix}{${tag}}:log`, `${prefix}{${tag}}:seq`];
  }

  function failed(cannot: string, tag: string, detail: string, cause?: unknown): MuxwsError {
    return new MuxwsError(`${cannot} of tag "${tag}" in Redis: ${detail}`, { cause });
  }

  function timedOut(cannot: string, tag: string): TimeoutError {
    return new TimeoutError(
      `${cannot} of tag "${tag}" in Redis: no answer within ${commandTimeoutMs} ms`,
    );
  }

  /** Runs one script for `tag`, bounded by the timeout; rejections say `cannot` and the tag. */
  function run(cannot: string, tag: string, script: string, args: string[]): Promise<unknown> {
    if (client.isReady === false) {
      return Promise.reject(failed(cannot, tag, 'the client is not connected'));
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timedOut(cannot, tag)), commandTimeoutMs);
    });
    const options = { keys: keys(tag), arguments: args };
    // A read may run in any order, so a NOSCRIPT simply sends the body; appends go through
    // their lane.
    const answer = evalScript(client, loaded, script, options).then((reply) => reply, (cause) => {
      throw failed(cannot, tag, messageOf(cause), cause);
    });
    return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
  }

  /**
   * Sends one append of `lane`: as EVAL or EVALSHA when `by` says, else as EVALSHA when the
   * script is loaded or another append of the tag is in flight as EVALSHA. (Sent as EVAL then,
   * it could be applied before that one is refused with NOSCRIPT and sent again.) The deadline
   * is `commandTimeoutMs` after the call, at every send: see {@linkcode redisHistory}.
   */
  function send(tag: string, lane: Lane, flight: Flight, by?: 'eval' | 'sha'): void {
    const sha1 = digestOf(APPEND_SCRIPT);
    const canSha = sha1 !== undefined && typeof client.evalSha === 'function';
    flight.bySha = canSha && by !== 'eval' && (
      by === 'sha' || loaded.has(APPEND_SCRIPT) ||
      lane.flights.some((other) => other.state === 'sent' && other.bySha)
    );
    flight.state = 'sent';
    const expiresAt = redisOffsetMs === undefined
      ? 0
      : Math.floor(flight.calledAt + redisOffsetMs + commandTimeoutMs);
    const options = {
      keys: keys(tag),
      arguments: [...flight.args, String(expiresAt), flight.origin],
    };
    const bySha = flight.bySha;
    let sending: Promise<unknown>;
    try {
      if (client.isReady === false) throw new Error('the client is not connected');
      sending = bySha ? client.evalSha!(sha1!, options) : client.eval(APPEND_SCRIPT, options);
    } catch (error) {
      sending = Promise.reject(error);
    }
    sending.then((reply) => {
      if (!bySha) loaded.add(APPEND_SCRIPT);
      answered(tag, lane, flight, { reply });
    }, (error) => {
      if (bySha && isNoScript(error)) loaded.delete(APPEND_SCRIPT);
      answered(tag, lane, flight, { error });
    });
  }

  /** Takes `flight` out of its lane and tells its caller. */
  function settle(lane: Lane, flight: Flight, outcome: { reply: unknown } | { error: unknown }) {
    if (flight.state === 'settled') return;
    flight.state = 'settled';
    lane.flights.splice(lane.flights.indexOf(flight), 1);
    flight.settle(outcome);
  }

  /** Redis answered a send of `flight`. */
  function answered(
    tag: string,
    lane: Lane,
    flight: Flight,
    outcome: { reply: unknown } | { error: unknown },
  ): void {
    if (flight.state !== 'sent') return; // it timed out: its caller was told
    if ('error' in outcome) {
      if (flight.bySha && isNoScript(outcome.error)) {
        // Redis ran nothing: the append waits for the others of its tag in flight.
        flight.state = 'refused';
        flight.refusal = outcome.error;
        lane.holding = true;
      } else {
        settle(lane, flight, {
          error: failed(
            'Cannot append to the history',
            tag,
            messageOf(outcome.error),
            outcome.error,
          ),
        });
      }
    } else {
      const reply = outcome.reply;
      if (!(Array.isArray(reply) && reply[0] === 0)) {
        lane.applied = Math.max(lane.applied, flight.order);
      }
      settle(lane, flight, outcome);
    }
    advance(tag, lane);
  }

  /**
   * Once no append of the tag is in flight: each refused one rejects when a later one was
   * applied (sent again, it would take a higher seq), the others are sent again in call order,
   * the first as EVAL (it loads the script), the rest as EVALSHA right behind it. When none was
   * refused, the appends that waited meanwhile are sent, in call order.
   */
  function advance(tag: string, lane: Lane): void {
    if (lane.flights.some((flight) => flight.state === 'sent')) return;
    const again: Flight[] = [];
    for (const flight of lane.flights.filter((flight) => flight.state === 'refused')) {
      if (lane.applied > flight.order) {
        settle(lane, flight, {
          error: failed(
            'Cannot append to the history',
            tag,
            messageOf(flight.refusal),
            flight.refusal,
          ),
        });
      } else {
        again.push(flight);
      }
    }
    if (again.length > 0) {
      again.forEach((flight, i) => send(tag, lane, flight, i === 0 ? 'eval' : 'sha'));
      return;
    }
    lane.holding = false;
    for (const flight of lane.flights.filter((flight) => flight.state === 'waiting')) {
      send(tag, lane, flight);
    }
    if (lane.flights.length === 0 && lanes.get(tag) === lane) lanes.delete(tag);
  }

  function checkTag(cannot: string, tag: unknown): Error | undefined {
    if (isTag(tag)) return undefined;
    return new TypeError(
      `${cannot} as the tag must be a string of 1 to ${MAX_TAG_LENGTH} characters: current value is ${
        describe(tag)
      }`,
    );
  }

  function unexpected(cannot: string, tag: string, reply: unknown): MuxwsError {
    return new MuxwsError(
      `${cannot} of tag "${tag}" in Redis: expected the script's reply, found ${describe(reply)}`,
    );
  }

  return {
    prefix,
    async append(tag: string, data: string | Uint8Array): Promise<number> {
      const cannot = 'Cannot append to the history';
      const bad = checkTag(cannot, tag);
      if (bad) throw bad;
      const binary = data instanceof Uint8Array;
      if (!binary && typeof data !== 'string') {
        throw new TypeError(
          `${cannot} of tag "${tag}" as the data must be a string or a Uint8Array: current value is ${
            describe(data)
          }`,
        );
      }
      if (client.isReady === false) throw failed(cannot, tag, 'the client is not connected');
      const at = now();
      const args = [
        String(Math.floor(at)),
        String(maxEntries),
        String(maxAgeMs),
        crypto.randomUUID(),
        binary ? BYTES : TEXT,
        binary ? toBase64(data) : data,
      ];
      let lane = lanes.get(tag);
      if (lane === undefined) {
        lane = { next: 0, flights: [], applied: -1, holding: false };
        lanes.set(tag, lane);
      }
      const reply = await new Promise<unknown>((resolve, reject) => {
        const timer = setTimeout(() => {
          // Sent and unanswered, it may have been applied before its deadline.
          if (flight.state === 'sent') lane.applied = Math.max(lane.applied, flight.order);
          settle(lane, flight, { error: timedOut(cannot, tag) });
          advance(tag, lane);
        }, commandTimeoutMs);
        const flight: Flight = {
          order: lane.next++,
          args,
          origin: String(seqOrigin(at)),
          calledAt: performance.now(),
          state: 'waiting',
          bySha: false,
          refusal: undefined,
          settle(outcome) {
            clearTimeout(timer);
            if ('error' in outcome) reject(outcome.error);
            else resolve(outcome.reply);
          },
        };
        lane.flights.push(flight);
        if (!lane.holding) send(tag, lane, flight);
      });
      if (
        !Array.isArray(reply) || reply.length !== 2 || !Number.isSafeInteger(reply[0]) ||
        reply[0] < 0 || typeof reply[1] !== 'number'
      ) {
        throw unexpected(cannot, tag, reply);
      }
      const [seq, redisMs] = reply as [number, number];
      redisOffsetMs = redisMs - performance.now();
      if (seq === 0) {
        throw new MuxwsError(
          `${cannot} of tag "${tag}" in Redis: it was not applied as Redis ran it more than ${commandTimeoutMs} ms after it was sent`,
        );
      }
      return seq;
    },
    async head(tag: string): Promise<number> {
      const cannot = 'Cannot read the head';
      const bad = checkTag(cannot, tag);
      if (bad) throw bad;
      const reply = await run(cannot, tag, HEAD_SCRIPT, []);
      if (typeof reply !== 'number' || !Number.isSafeInteger(reply) || reply < 0) {
        throw unexpected(cannot, tag, reply);
      }
      return reply;
    },
    async range(tag: string, after: number, limit: number): Promise<RedisHistoryRange> {
      const cannot = 'Cannot read the history';
      const bad = checkTag(cannot, tag);
      if (bad) throw bad;
      checkInteger(`${cannot} of tag "${tag}"`, 'after', after, 0);
      checkInteger(`${cannot} of tag "${tag}"`, 'limit', limit, 1);
      const reply = await run(cannot, tag, RANGE_SCRIPT, [
        String(after),
        String(limit),
        String(Math.floor(now()) - maxAgeMs),
        String(maxEntries),
      ]);
      if (
        !Array.isArray(reply) || reply.length < 3 || (reply.length - 3) % 3 !== 0 ||
        typeof reply[0] !== 'number' || typeof reply[1] !== 'string'
      ) {
        throw unexpected(cannot, tag, reply);
      }
      const entries: HistoryEntry[] = [];
      for (let i = 3; i < reply.length; i += 3) {
        const [seq, kind, text] = [reply[i], reply[i + 1], reply[i + 2]];
        if (typeof seq !== 'number' || typeof text !== 'string') {
          throw unexpected(cannot, tag, reply);
        }
        let data: string | Uint8Array;
        if (kind === TEXT) {
          data = text;
        } else if (kind === BYTES) {
          try {
            data = fromBase64(text);
          } catch (cause) {
            throw new MuxwsError(
              `${cannot} of tag "${tag}" in Redis: entry ${seq} holds bytes that are not base64`,
              { cause },
            );
          }
        } else {
          throw new MuxwsError(
            `${cannot} of tag "${tag}" in Redis: entry ${seq} has the kind ${
              describe(kind)
            }, expected "${TEXT}" or "${BYTES}"`,
          );
        }
        entries.push({ seq, data });
      }
      return { entries, gap: reply[2] === 1, head: reply[0], epoch: reply[1] };
    },
  };
}
