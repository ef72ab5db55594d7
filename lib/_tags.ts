/**
 * Tags: the one check of a tag for the library (a string of 1 to 256 characters) and a peer's
 * tag set, which validates what is added and tells the acceptor's tag index of each change.
 *
 * Internal: imported from `lib/` and `lib/adapters/` only, never re-exported.
 *
 * @module
 */
import { describe } from './_describe.ts';

/** The longest tag, in UTF-16 code units. */
export const MAX_TAG_LENGTH = 256;

/** Whether `value` is a tag: a string of 1 to {@linkcode MAX_TAG_LENGTH} characters. */
export function isTag(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= MAX_TAG_LENGTH;
}

/**
 * Returns `value` when it is a tag.
 *
 * @param what The start of the error message, such as `Cannot broadcast`.
 * @param value The tag to check.
 * @throws {TypeError} When `value` is not a string of 1 to 256 characters.
 */
export function checkTag(what: string, value: unknown): string {
  if (!isTag(value)) {
    throw new TypeError(
      `${what} as the tag must be a string of 1 to ${MAX_TAG_LENGTH} characters: current value is ${
        describe(value)
      }`,
    );
  }
  return value;
}

/** Told when a peer's tags change: the acceptor's tag index, reached through the peer's link. */
export interface TagIndex {
  /** `tag` was added to the peer's set. */
  tagAdded(tag: string): void;
  /** `tag` was deleted from the peer's set. */
  tagDeleted(tag: string): void;
}

/**
 * The methods of `Set.prototype` a {@linkcode TagSet} spills for before they run: each reads the
 * set's own storage directly rather than through `size`, `has` or `keys`. The runtimes without
 * them skip them.
 */
const STORAGE_METHODS = [
  'union',
  'intersection',
  'difference',
  'symmetricDifference',
  'isSubsetOf',
  'isSupersetOf',
  'isDisjointFrom',
] as const;

/**
 * A peer's tag set: validates additions and keeps the acceptor's tag index current. It is bound
 * to the peer's link, an object the peer has anyway, rather than to two closures per peer: idle
 * memory per peer is budgeted. Unbound (before the peer is indexed, after it ended) it only
 * keeps its tags.
 *
 * For the same budget, the first tag of a set that never held one is kept in a field: a `Set`'s
 * first entry makes JavaScriptCore allocate its table (~220 bytes), and a peer often holds one
 * tag all its life. The set's own storage takes over (the tag first) at the second tag or at a
 * `Set.prototype` method that reads the storage directly ({@linkcode STORAGE_METHODS}); every
 * method of `Set<string>` answers alike either way, iteration order and a live iteration's view of
 * additions and deletions included. What reads the storage without a method (`structuredClone`)
 * sees a set in the field as empty.
 */
export class TagSet extends Set<string> {
  #index: TagIndex | undefined;
  /**
   * The first tag, while the set's own storage is empty and was never used. Once the field is
   * left, the storage keeps every tag: `false` while the tag that moved there is its first entry;
   * `null` once the field's tag was deleted, there or in the field (or a storage method ran
   * before any tag), so every tag of the storage came after it; `undefined` before any tag.
   */
  #first: string | null | false | undefined;

  static {
    // How Node, Deno and Bun print the set: as a `Set` of its tags (their own printing reads
    // the storage).
    Object.defineProperty(TagSet.prototype, Symbol.for('nodejs.util.inspect.custom'), {
      configurable: true,
      writable: true,
      value: function (
        this: TagSet,
        _depth: number,
        options: unknown,
        inspect: (value: unknown, options: unknown) => string,
      ): string {
        return inspect(new Set(this), options);
      },
    });
    for (const name of STORAGE_METHODS) {
      const method = (Set.prototype as unknown as Record<string, unknown>)[name];
      if (typeof method !== 'function') continue;
      Object.defineProperty(TagSet.prototype, name, {
        configurable: true,
        writable: true,
        value: function (this: TagSet, ...args: unknown[]): unknown {
          this.#spill();
          return (method as (...args: unknown[]) => unknown).apply(this, args);
        },
      });
    }
  }

  /** Binds the set to `index`, or unbinds it with `undefined`. */
  bind(index: TagIndex | undefined): void {
    this.#index = index;
  }

  override get size(): number {
    return typeof this.#first === 'string' ? 1 : super.size;
  }

  override has(tag: string): boolean {
    const first = this.#first;
    return typeof first === 'string' ? first === tag : super.has(tag);
  }

  /** Adds `tag`, telling the index when it is new. @throws {TypeError} For a non-tag. */
  override add(tag: string): this {
    checkTag('Cannot add a tag to a Peer', tag);
    if (this.has(tag)) return this;
    if (this.#first === undefined) {
      this.#first = tag;
    } else {
      this.#spill();
      super.add(tag);
    }
    this.#index?.tagAdded(tag);
    return this;
  }

  /** Deletes `tag`, telling the index when it was there. */
  override delete(tag: string): boolean {
    let had: boolean;
    if (typeof this.#first === 'string') {
      had = this.#first === tag;
      if (had) this.#first = null;
    } else {
      // Nothing precedes the tag that moved to the storage: it is the storage's first entry.
      if (this.#first === false && super.values().next().value === tag) this.#first = null;
      had = super.delete(tag);
    }
    if (had) this.#index?.tagDeleted(tag);
    return had;
  }

  /** Deletes every tag, one by one, so the index hears of each. */
  override clear(): void {
    for (const tag of [...this]) this.delete(tag);
  }

  override forEach(
    callback: (value: string, key: string, set: Set<string>) => void,
    thisArg?: unknown,
  ): void {
    for (const tag of this) callback.call(thisArg, tag, tag, this);
  }

  override *values(): SetIterator<string> {
    const first = this.#first;
    if (typeof first !== 'string') {
      yield* super.values();
      return;
    }
    yield first;
    // What a live iteration of a Set sees after its first entry: nothing, while the field still
    // holds it; the storage's tags after it, once it moved there (its first entry, or deleted
    // since, so that every tag of the storage came after it).
    const now = this.#first;
    if (now === first) return;
    let skip = now === false;
    for (const tag of super.values()) {
      if (skip) {
        skip = false;
        continue;
      }
      yield tag;
    }
  }

  override keys(): SetIterator<string> {
    return this.values();
  }

  override *entries(): SetIterator<[string, string]> {
    for (const tag of this) yield [tag, tag];
  }

  override [Symbol.iterator](): SetIterator<string> {
    return this.values();
  }

  /** Moves the field's tag to the set's own storage, which keeps every tag from then on. */
  #spill(): void {
    const first = this.#first;
    if (typeof first === 'string') {
      super.add(first);
      this.#first = false;
    } else if (first === undefined) {
      this.#first = null;
    }
  }
}
