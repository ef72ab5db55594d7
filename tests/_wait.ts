// Bounded waits for tests on real sockets and processes: a promise raced against a deadline, and a
// condition polled until it holds or the deadline passes. Both fail naming what was awaited.

/** `promise`, or a rejection naming `what` once `ms` have passed; the timer never outlives it. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `predicate` every `pollMs` until it holds; throws naming `what` after `ms`. */
export async function waitFor(
  predicate: () => boolean,
  ms: number,
  what: string,
  pollMs: number = 10,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
