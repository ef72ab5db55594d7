// Payload transformers on the JSON codec: superjson as it is and a small adapter of a library that
// packs a value into one string, between a real Acceptor and connect() over in-memory sockets;
// the wire a peer without the transformer sees; the errors of a transformer that throws; and the
// limits counted after the transform.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import superjson from 'superjson';
import {
  type Codec,
  connect,
  type Connection,
  jsonCodec,
  type PublishMessage,
  StreamResetError,
  subprotocol,
  type Transformer,
} from 'muxws';
import { Acceptor, type AcceptorOptions } from 'muxws/acceptor';
import { served } from '../_raw_peer.ts';
import { within } from '../_wait.ts';

/** What every round trip sends: the values JSON cannot carry as they are. */
function rich(n: number) {
  return {
    at: new Date(Date.UTC(2026, 0, n)),
    members: new Map<string, Set<number>>([['ada', new Set([n, n + 1])]]),
    big: 2n ** 64n + BigInt(n),
  };
}

/**
 * A devalue-style adapter: the whole value packed into one string with tagged arrays for Date,
 * Map, Set and BigInt (`json` is that string, no `meta`).
 */
const packed: Transformer = {
  serialize: (value) => ({ json: JSON.stringify(pack(value)) }),
  deserialize: ({ json }) => unpack(JSON.parse(json as string)),
};

function pack(value: unknown): unknown {
  if (typeof value === 'bigint') return ['BigInt', String(value)];
  if (value instanceof Date) return ['Date', value.toISOString()];
  if (value instanceof Map) return ['Map', [...value].map(([k, v]) => [pack(k), pack(v)])];
  if (value instanceof Set) return ['Set', [...value].map(pack)];
  if (Array.isArray(value)) return ['Array', value.map(pack)];
  if (typeof value === 'object' && value !== null) {
    return ['Object', Object.entries(value).map(([k, v]) => [k, pack(v)])];
  }
  return ['Value', value];
}

function unpack(packed: unknown): unknown {
  const [kind, body] = packed as [string, never];
  switch (kind) {
    case 'BigInt':
      return BigInt(body);
    case 'Date':
      return new Date(body);
    case 'Map':
      return new Map((body as [unknown, unknown][]).map(([k, v]) => [unpack(k), unpack(v)]));
    case 'Set':
      return new Set((body as unknown[]).map(unpack));
    case 'Array':
      return (body as unknown[]).map(unpack);
    case 'Object':
      return Object.fromEntries((body as [string, unknown][]).map(([k, v]) => [k, unpack(v)]));
    default:
      return body;
  }
}

/** An acceptor on `codec` served in memory, and a dialer on `dialerCodec` (default: the same). */
async function pair(
  codec: Codec,
  options: AcceptorOptions = {},
  dialerCodec: Codec = codec,
  onPublish?: (message: PublishMessage) => void,
) {
  const { acceptor, WebSocket } = served({ codec, ...options });
  const connection = await within(
    connect('ws://test/ws', { WebSocket, codec: dialerCodec, heartbeat: false, onPublish }),
    5000,
    'the connection',
  );
  return { acceptor, connection };
}

async function roundTrips(transformer: Transformer, label: string): Promise<void> {
  const codec = jsonCodec({ transformer });
  const seen: unknown[] = [];
  let published!: (payload: unknown) => void;
  const publish = new Promise((resolve) => published = resolve);
  let connection: Connection | undefined;
  let acceptor: Acceptor | undefined;
  try {
    ({ acceptor, connection } = await pair(
      codec,
      {
        onStream: async (stream) => {
          seen.push(stream.payload);
          if (stream.payload instanceof Map) return stream.payload;
          for await (const message of stream.readable) {
            seen.push(message);
            await stream.write(message);
          }
          await stream.end(rich(9));
          return undefined;
        },
      },
      codec,
      ({ payload }) => published(payload),
    ));
    // request: the OPEN's payload and the answer
    const asked = new Map<bigint, Date>([[1n, new Date(5)]]);
    assert.deepEqual(await within(connection.request(asked), 5000, `${label} request`), asked);
    assert.deepEqual(seen[0], asked);
    // a stream: DATA both ways
    const stream = connection.open(rich(1));
    const echoes: unknown[] = [];
    const reading = (async () => {
      for await (const message of stream.readable) echoes.push(message);
    })();
    await stream.write(rich(2));
    await stream.end(rich(3));
    await within(reading, 5000, `${label} stream`);
    assert.deepEqual(seen.slice(1), [rich(1), rich(2), rich(3)]);
    assert.deepEqual(echoes, [rich(2), rich(3), rich(9)]);
    assert.ok((echoes[0] as { at: unknown }).at instanceof Date);
    assert.equal(typeof (echoes[0] as { big: unknown }).big, 'bigint');
    // PUBLISH
    assert.equal(await acceptor.broadcastAll(rich(4)), 1);
    assert.deepEqual(await within(publish, 5000, `${label} publish`), rich(4));
  } finally {
    await connection?.close();
    await acceptor?.close({ drainMs: 0 });
  }
}

test('jsonCodec({ transformer: superjson }) round-trips Date, Map, Set and BigInt in requests, stream DATA and PUBLISH (WSM-API-007)', async () => {
  await roundTrips(superjson, 'superjson');
});

test('jsonCodec({ transformer }) takes a devalue-style adapter that packs each payload into one string (WSM-API-007)', async () => {
  await roundTrips(packed, 'packed');
});

test('a transformed payload is an ordinary frame holding { json, meta } to a peer without the transformer; headers and null stay as they are (WSM-API-007)', () => {
  const codec = jsonCodec({ transformer: superjson });
  const text = codec.encode([9, 'room', { kind: 'note' }, rich(1)]) as string;
  const [kind, tag, headers, payload] = jsonCodec.decode(text) as unknown[];
  assert.deepEqual([kind, tag, headers], [9, 'room', { kind: 'note' }]);
  assert.deepEqual(Object.keys(payload as object), ['json', 'meta']);
  assert.deepEqual(superjson.deserialize(payload as never), rich(1));
  assert.equal(codec.encode([2, 3, 1, null]), '[2,3,1,null]');
  assert.equal(codec.encode([1, 5, 0, null, undefined]), '[1,5,0,null,null]');
  assert.equal(codec.encode([2, 3, 0, 'plain']), '[2,3,0,{"json":"plain"}]');
  // frames without a payload are the base codec's
  assert.equal(codec.encode([4, 3, 'invalid', 'no']), '[4,3,"invalid","no"]');
  assert.deepEqual(codec.decode('[2,3,0,null]'), [2, 3, 0, null]);
  assert.throws(() => codec.decode('[2,3,0,"bare"]'), {
    message:
      'Cannot decode a transformed payload: expected null or an object { json, meta }: found "bare"',
  });
});

test('a transformed codec has a subprotocol of its own, so an acceptor without the transformer refuses it (WSM-API-007)', async () => {
  const codec = jsonCodec({ transformer: superjson });
  assert.equal(subprotocol(codec), 'muxws.v1.json-transformer');
  assert.equal(
    subprotocol(jsonCodec({ transformer: superjson, name: 'json-superjson' })),
    'muxws.v1.json-superjson',
  );
  const plain = new Acceptor({ idleTimeoutMs: 0 });
  const transforming = new Acceptor({ idleTimeoutMs: 0, codec });
  try {
    assert.equal(plain.protocol(subprotocol(codec)), undefined);
    assert.equal(transforming.protocol('muxws.v1.json'), undefined);
    assert.equal(transforming.protocol(subprotocol(codec)), 'muxws.v1.json-transformer');
  } finally {
    await plain.close();
    await transforming.close();
  }
});

test('jsonCodec() refuses a transformer without serialize and deserialize, and a name without a transformer (WSM-API-007)', () => {
  assert.throws(() => jsonCodec({ transformer: { serialize: () => ({ json: 1 }) } as never }), {
    name: 'TypeError',
    message: /"transformer" must be an object with serialize and deserialize functions/,
  });
  assert.throws(() => jsonCodec({ transformer: 5 as never }), {
    name: 'TypeError',
    message:
      'Cannot create a JSON codec as "transformer" must be an object with serialize and deserialize functions: current value is 5',
  });
  assert.throws(() => jsonCodec({ name: 'mine' }), {
    name: 'TypeError',
    message:
      'Cannot create a JSON codec as "name" must be absent without a transformer: current value is "mine"',
  });
  assert.throws(() => jsonCodec({ transformer: superjson, name: 'Mine!' }), {
    name: 'TypeError',
    message:
      'Cannot create a JSON codec as "name" must be 1 to 32 of a-z, 0-9 and -: current value is "Mine!"',
  });
});

class Secret {
  constructor(readonly value: string) {}
}

/** superjson that refuses every `Secret`, and restores nothing whose json is "poison". */
const picky: Transformer = {
  serialize(value) {
    if (value instanceof Secret) throw new TypeError('Secrets stay home');
    if (typeof value === 'object' && value !== null) {
      for (const part of Object.values(value)) this.serialize(part);
    }
    return superjson.serialize(value as never);
  },
  deserialize(payload) {
    if (payload.json === 'poison') throw new TypeError('Poisoned');
    return superjson.deserialize(payload as never);
  },
};

test('a transformer that throws fails the write naming the value path, and a payload it cannot restore is a decode reset (WSM-API-007)', async () => {
  const codec = jsonCodec({ transformer: picky });
  const reported: unknown[] = [];
  let connection: Connection | undefined;
  let acceptor: Acceptor | undefined;
  try {
    ({ acceptor, connection } = await pair(codec, {
      onStream: (stream) => stream.payload,
      onError: (error) => reported.push(error),
    }));
    const refused = await connection.request({ user: { key: new Secret('k') } }).catch((e) => e);
    assert.ok(refused instanceof TypeError, String(refused));
    assert.match(refused.message, /the transformer cannot serialize Secret at \.user\.key/);
    const stream = connection.open(null);
    await assert.rejects(stream.write({ list: [1, new Secret('k')] }), {
      name: 'TypeError',
      message:
        /^Cannot encode the frame of write\(\) on stream \d+: the transformer cannot serialize Secret at \.list\[1\]$/,
    });
    stream.reset('cancel');
    await assert.rejects(acceptor.broadcastAll([new Secret('k')]), {
      message: /the transformer cannot serialize Secret at \[0\]/,
    });
    const poisoned = await connection.request('poison').catch((e) => e);
    assert.ok(poisoned instanceof StreamResetError, String(poisoned));
    assert.equal(poisoned.code, 'decode');
    assert.match((reported[0] as Error).message, /^Cannot decode the OPEN of stream \d+$/);
    assert.equal(((reported[0] as Error).cause as Error).message, 'Poisoned');
    assert.deepEqual(await connection.request(new Set([1])), new Set([1]));
  } finally {
    await connection?.close();
    await acceptor?.close({ drainMs: 0 });
  }
});

test('the acceptor counts the items of a transformed payload after the transform too, Map and Set entries included (WSM-API-007, WSM-LIM-001)', async () => {
  const codec = jsonCodec({ transformer: packed });
  let connection: Connection | undefined;
  let acceptor: Acceptor | undefined;
  try {
    ({ acceptor, connection } = await pair(codec, {
      limits: { maxMessageItems: 500 },
      onStream: (stream) => stream.payload instanceof Set ? stream.payload.size : 'other',
    }));
    // One string on the wire: 400 Set entries once restored, under the limit.
    assert.equal(await connection.request(new Set(Array.from({ length: 400 }, (_, i) => i))), 400);
    const closed = connection.closed;
    void connection.request(new Set(Array.from({ length: 600 }, (_, i) => i))).catch(() => {});
    const info = await within(closed, 5000, 'the close for too many items');
    assert.equal(info.code, 1009);
    assert.match(info.reason, /more than 500 items/);
  } finally {
    await connection?.close();
    await acceptor?.close({ drainMs: 0 });
  }
});

test('with strict, the transformed output is what is checked (WSM-API-007)', () => {
  const lax: Transformer = { serialize: (value) => ({ json: value }), deserialize: (p) => p.json };
  const codec = jsonCodec({ strict: true, transformer: lax });
  assert.equal(codec.encode([2, 1, 0, { n: 1 }]), '[2,1,0,{"json":{"n":1}}]');
  assert.throws(() => codec.encode([2, 1, 0, { at: new Date(0) }]), {
    message: 'Cannot encode the frame as strict JSON: Date at [3].json.at',
  });
});

test('the depth limit walks into the Maps and Sets a transformer restored (WSM-API-007, WSM-LIM-001)', async () => {
  const codec = jsonCodec({ transformer: superjson });
  let connection: Connection | undefined;
  let acceptor: Acceptor | undefined;
  try {
    ({ acceptor, connection } = await pair(codec, {
      limits: { maxDepth: 8 },
      onError: () => {},
      onStream: () => 'taken',
    }));
    /** `depth` Maps, each the only value of the one outside it, a Set at the bottom. */
    const nested = (depth: number): unknown =>
      depth === 1 ? new Set([1]) : new Map([['inner', nested(depth - 1)]]);
    assert.equal(await connection.request(nested(6)), 'taken');
    const refused = await connection.request(nested(12)).catch((e) => e);
    assert.ok(refused instanceof StreamResetError, String(refused));
    assert.equal(refused.code, 'decode');
  } finally {
    await connection?.close();
    await acceptor?.close({ drainMs: 0 });
  }
});

test('a Transformer is typed by its shape: superjson fits as it is, an object missing a method or returning no { json } does not (WSM-API-007)', () => {
  const fits: Transformer = superjson;
  // @ts-expect-error deserialize is missing
  const missing: Transformer = { serialize: (value: unknown) => ({ json: value }) };
  const bare: Transformer = {
    // @ts-expect-error serialize returns { json, meta }, not the value
    serialize: (value: unknown) => value,
    deserialize: (payload) => payload.json,
  };
  assert.equal(typeof fits.serialize, 'function');
  assert.equal(typeof missing.serialize, 'function');
  assert.equal(typeof bare.deserialize, 'function');
});
