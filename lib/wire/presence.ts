/**
 * Presence on the wire (docs/protocol.md §10.2): the payloads of the `:presence` PUBLISH frames,
 * their checks, and the one rule that applies a diff to a state, which the acceptor's replica and
 * the dialer's follower both run.
 *
 * A state maps key → ref → meta: a key is who is present (a user), a ref one presence of it (a
 * tab, a device). A snapshot (`"sync"`) is a whole state. A diff lists leaves (key → refs) and
 * joins (key → ref → meta), applied leaves first; a ref that leaves and joins in one diff is an
 * update of its meta.
 *
 * Internal: imported from `lib/` only.
 *
 * @module
 */
import { isHeaders } from './reserved.ts';

/** The longest presence key, and the longest ref, in UTF-16 code units. */
export const MAX_PRESENCE_KEY_LENGTH = 256;

/** A snapshot's payload: key → ref → meta. */
export type PresenceSyncPayload = Record<string, Record<string, unknown>>;

/** A diff's payload: leaves first (key → refs), then joins (key → ref → meta). */
export interface PresenceDiffPayload {
  /** The refs that left, per key. */
  readonly leaves: Record<string, readonly string[]>;
  /** The refs that joined, per key, with their metas. */
  readonly joins: Record<string, Record<string, unknown>>;
}

/** A state as its holder keeps it: key → ref → meta, in arrival order. */
export type PresenceEntries = Map<string, Map<string, unknown>>;

/** What one diff changed, per key: the metas that left and the metas that joined. */
export interface PresenceChanges {
  /** Per key, the metas of the refs that left (in wire order). */
  readonly left: Map<string, unknown[]>;
  /** Per key, the metas of the refs that joined (in wire order). */
  readonly joined: Map<string, unknown[]>;
}

/** A plain object: {@linkcode isHeaders}'s shape, less `null`. */
function isPlain(value: unknown): value is Record<string, unknown> {
  return value !== null && isHeaders(value);
}

/** True for a key or a ref: a string of 1 to {@linkcode MAX_PRESENCE_KEY_LENGTH} characters. */
export function isPresenceKey(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value.length <= MAX_PRESENCE_KEY_LENGTH;
}

function isRefs(value: unknown): value is Record<string, unknown> {
  if (!isPlain(value)) return false;
  for (const ref in value) if (!isPresenceKey(ref)) return false;
  return true;
}

/** True when `value` has the shape of a snapshot's payload. */
export function isPresenceSync(value: unknown): value is PresenceSyncPayload {
  if (!isPlain(value)) return false;
  for (const key in value) if (!isPresenceKey(key) || !isRefs(value[key])) return false;
  return true;
}

/** True when `value` has the shape of a diff's payload. */
export function isPresenceDiff(value: unknown): value is PresenceDiffPayload {
  if (!isPlain(value) || !isPlain(value.leaves) || !isPresenceSync(value.joins)) return false;
  const leaves = value.leaves;
  for (const key in leaves) {
    const refs = leaves[key];
    if (!isPresenceKey(key) || !Array.isArray(refs) || !refs.every(isPresenceKey)) return false;
  }
  return true;
}

/**
 * `record[key]`, made by `make` and defined as an own property when `record` has none: a key or
 * ref is any string, `"__proto__"` and `"toString"` included, so it never reaches the prototype.
 */
export function ownSlot<T>(record: Record<string, T>, key: string, make: () => T): T {
  if (Object.hasOwn(record, key)) return record[key];
  const value = make();
  setOwn(record, key, value);
  return value;
}

/** `record[key]` when `record` has it as its own property, else `undefined`: never inherited. */
function ownValue<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Sets `record[key]` as an own data property, whatever `key` is (`"__proto__"` included). */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, {
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });
}

function push(into: Map<string, unknown[]>, key: string, meta: unknown): void {
  const list = into.get(key);
  if (list) list.push(meta);
  else into.set(key, [meta]);
}

/**
 * Applies `diff` to `state` (leaves first, then joins) and returns what it changed. A leave of a
 * ref the state does not hold changes nothing; a join of a ref it holds with the same meta
 * changes nothing (so a join is never duplicated), and with another meta is an update (a leave of
 * the old meta and a join of the new one). Metas are compared with `same`.
 */
export function applyPresenceDiff(
  state: PresenceEntries,
  diff: PresenceDiffPayload,
  same: (a: unknown, b: unknown) => boolean = sameJson,
): PresenceChanges {
  const left = new Map<string, unknown[]>();
  const joined = new Map<string, unknown[]>();
  for (const key in diff.leaves) {
    const refs = state.get(key);
    if (!refs) continue;
    for (const ref of diff.leaves[key]) {
      if (!refs.has(ref)) continue;
      push(left, key, refs.get(ref));
      refs.delete(ref);
    }
    if (refs.size === 0) state.delete(key);
  }
  for (const key in diff.joins) {
    const adds = diff.joins[key];
    let refs = state.get(key);
    for (const ref in adds) {
      const meta = adds[ref];
      if (refs?.has(ref)) {
        const was = refs.get(ref);
        if (same(was, meta)) continue;
        push(left, key, was);
      }
      if (!refs) state.set(key, refs = new Map());
      refs.set(ref, meta);
      push(joined, key, meta);
    }
  }
  return { left, joined };
}

/**
 * The diff that turns `state` into `snapshot`: every ref the snapshot lacks leaves, every ref
 * `state` lacks joins, and a ref whose meta differs (by `same`) leaves and joins again.
 */
export function presenceDiff(
  state: PresenceEntries,
  snapshot: PresenceSyncPayload,
  same: (a: unknown, b: unknown) => boolean = sameJson,
): PresenceDiffPayload {
  const leaves: Record<string, string[]> = {};
  const joins: Record<string, Record<string, unknown>> = {};
  for (const [key, refs] of state) {
    const now = ownValue(snapshot, key);
    for (const [ref, meta] of refs) {
      if (now && Object.hasOwn(now, ref) && same(meta, now[ref])) continue;
      ownSlot(leaves, key, () => []).push(ref);
    }
  }
  for (const key in snapshot) {
    const held = state.get(key);
    const refs = snapshot[key];
    for (const ref in refs) {
      if (held?.has(ref) && same(held.get(ref), refs[ref])) continue;
      setOwn(ownSlot(joins, key, () => ({})), ref, refs[ref]);
    }
  }
  // A changed meta left above and joins again here: applied leaves first, it is an update.
  return { leaves, joins };
}

/**
 * `diff` cut into diffs that each `fits`, applied in order to the same effect as `diff`: each key's
 * leaves and joins stay in one piece, so a ref that leaves and joins again (an update) is never
 * seen leaving, nor a key whose refs all change seen absent. A key too large for one piece is cut
 * between its refs, a ref's leave and join still together. A single ref that does not fit is a
 * piece of its own, which the caller finds over the limit again. One piece, a copy of `diff`,
 * when it fits whole.
 */
export function splitPresenceDiff(
  diff: PresenceDiffPayload,
  fits: (piece: PresenceDiffPayload) => boolean,
): PresenceDiffPayload[] {
  const keys = new Set([...Object.keys(diff.leaves), ...Object.keys(diff.joins)]);
  return bisect([...keys].map((key) => partOf(diff, key)), fits, (part) => {
    const [key] = Object.keys(part.leaves).concat(Object.keys(part.joins));
    const left = ownValue(part.leaves, key) ?? [];
    const refs = new Set([...left, ...Object.keys(ownValue(part.joins, key) ?? {})]);
    return [...refs].map((ref) => partOf(part, key, ref));
  });
}

/**
 * The parts of `units` merged into as few diffs as `fits` allows, by halves; a lone unit that
 * does not fit is cut by `cut` (while that gives more than one) and its parts bisected in turn.
 */
function bisect(
  units: PresenceDiffPayload[],
  fits: (piece: PresenceDiffPayload) => boolean,
  cut?: (unit: PresenceDiffPayload) => PresenceDiffPayload[],
): PresenceDiffPayload[] {
  const merged = mergeDiffs(units);
  if (fits(merged)) return [merged];
  if (units.length > 1) {
    const half = Math.ceil(units.length / 2);
    return [...bisect(units.slice(0, half), fits, cut), ...bisect(units.slice(half), fits, cut)];
  }
  const parts = cut?.(merged) ?? [];
  return parts.length > 1 ? bisect(parts, fits) : [merged];
}

/** The part of `diff` about `key` (and only `ref` of it, when given). */
function partOf(diff: PresenceDiffPayload, key: string, ref?: string): PresenceDiffPayload {
  const leaves: Record<string, string[]> = {};
  const joins: Record<string, Record<string, unknown>> = {};
  const left = ownValue(diff.leaves, key);
  const joined = ownValue(diff.joins, key);
  const refs = left?.filter((r) => ref === undefined || r === ref) ?? [];
  if (refs.length > 0) setOwn(leaves, key, refs);
  for (const r in joined) {
    if (ref === undefined || r === ref) setOwn(ownSlot(joins, key, () => ({})), r, joined[r]);
  }
  return { leaves, joins };
}

/** One diff holding every leave and join of `diffs`, in their order. */
function mergeDiffs(diffs: readonly PresenceDiffPayload[]): PresenceDiffPayload {
  if (diffs.length === 1) return diffs[0];
  const leaves: Record<string, string[]> = {};
  const joins: Record<string, Record<string, unknown>> = {};
  for (const diff of diffs) {
    for (const key in diff.leaves) ownSlot(leaves, key, () => []).push(...diff.leaves[key]);
    for (const key in diff.joins) {
      const into = ownSlot(joins, key, () => ({}));
      for (const ref in diff.joins[key]) setOwn(into, ref, diff.joins[key][ref]);
    }
  }
  return { leaves, joins };
}

/** Whether two decoded metas are the same value: equal as JSON. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}

/** A state as a plain snapshot payload (key → ref → meta). */
export function presenceSnapshot(state: PresenceEntries): PresenceSyncPayload {
  return Object.fromEntries([...state].map(([key, refs]) => [key, Object.fromEntries(refs)]));
}
