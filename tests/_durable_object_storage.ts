/**
 * An in-memory stand-in for a Durable Object's storage (`ctx.storage`): a sorted key-value map
 * with the API's `list` semantics and structured-cloned values, the object's one alarm, and
 * counters of the calls a test may bound.
 *
 * ```ts ignore
 * const storage = fakeStorage();
 * const history = durableObjectHistory(storage);
 * assert.equal(storage.alarm, null);
 * ```
 */
import type { DurableObjectPresenceStorage } from '../lib/adapters/cloudflare.ts';

/** The stand-in: the storage API plus what a test inspects. */
export interface FakeStorage extends DurableObjectPresenceStorage {
  /** The stored values, by key. */
  readonly map: Map<string, unknown>;
  /** When the alarm goes off (epoch ms), or `null`. */
  alarm: number | null;
  /** How many times each method was called. */
  readonly calls: { list: number; put: number; delete: number; setAlarm: number };
}

/** A new, empty stand-in. */
export function fakeStorage(): FakeStorage {
  const map = new Map<string, unknown>();
  const calls = { list: 0, put: 0, delete: 0, setAlarm: 0 };
  const storage: FakeStorage = {
    map,
    alarm: null,
    calls,
    get: (key) => Promise.resolve(structuredClone(map.get(key))),
    put: (entries) => {
      calls.put++;
      for (const [key, value] of Object.entries(entries)) map.set(key, structuredClone(value));
      return Promise.resolve();
    },
    delete: (keys) => {
      calls.delete++;
      return Promise.resolve(keys.filter((key) => map.delete(key)).length);
    },
    list: ({ prefix, start = '', limit = Infinity }) => {
      calls.list++;
      const keys = [...map.keys()].filter((k) => k.startsWith(prefix) && k >= start).sort();
      return Promise.resolve(
        new Map(keys.slice(0, limit).map((k) => [k, structuredClone(map.get(k))])),
      );
    },
    getAlarm: () => Promise.resolve(storage.alarm),
    setAlarm: (at) => {
      calls.setAlarm++;
      storage.alarm = at;
      return Promise.resolve();
    },
  };
  return storage;
}
