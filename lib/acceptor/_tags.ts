/**
 * Tags on the acceptor's side: the check that throws for a non-tag (over the one tag check,
 * `isTag()` in `lib/wire/frame.ts`) and a peer's tag set, which validates what is added and tells
 * the acceptor's tag index of each change.
 *
 * Private to `lib/acceptor/`, never re-exported.
 *
 * @module
 */
import { describe } from '../util/describe.ts';
import { isTag, MAX_TAG_LENGTH } from '../wire/frame.ts';

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
 * A peer's tag set: validates additions and keeps the acceptor's tag index current. It is bound
 * to the peer's link, an object the peer has anyway, rather than to two closures per peer: idle
 * memory per peer is budgeted. Unbound (before the peer is indexed, after it ended) it only
 * keeps its tags.
 */
export class TagSet extends Set<string> {
  #index: TagIndex | undefined;

  /** Binds the set to `index`, or unbinds it with `undefined`. */
  bind(index: TagIndex | undefined): void {
    this.#index = index;
  }

  /** Adds `tag`, telling the index when it is new. @throws {TypeError} For a non-tag. */
  override add(tag: string): this {
    checkTag('Cannot add a tag to a Peer', tag);
    if (!super.has(tag)) {
      super.add(tag);
      this.#index?.tagAdded(tag);
    }
    return this;
  }

  /** Deletes `tag`, telling the index when it was there. */
  override delete(tag: string): boolean {
    const had = super.delete(tag);
    if (had) this.#index?.tagDeleted(tag);
    return had;
  }

  /** Deletes every tag, one by one, so the index hears of each. */
  override clear(): void {
    for (const tag of [...this]) this.delete(tag);
  }
}
