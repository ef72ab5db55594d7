/**
 * {@linkcode advance}: an array used as a first-in first-out queue without an O(n) `shift()` per
 * entry, for the queues of a stream (waiting writes, unread messages).
 *
 * Private to `lib/session/`.
 *
 * @module
 */

/**
 * The new head of an array used as a queue once the entries before `head` were taken: empties it
 * when drained, and drops the taken entries once they are at least 1024 and half the array, so a
 * long-lived queue stays O(1) per entry without an O(n) `shift()` each time.
 */
export function advance(queue: unknown[], head: number): number {
  if (head === queue.length) {
    queue.length = 0;
    return 0;
  }
  if (head >= 1024 && head * 2 >= queue.length) {
    queue.splice(0, head);
    return 0;
  }
  return head;
}
