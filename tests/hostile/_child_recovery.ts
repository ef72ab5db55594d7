/**
 * The child acceptor of the recovery floods (`recovery_floods.ts`), selected by
 * `MUXWS_CHILD=recovery` in `serve_acceptor.ts` and `tests/node/hostile_node_test.ts`: an acceptor
 * with a `memoryHistory()` of 20 entries per tag that gives every peer the tag `room`, with the
 * default recovery bounds. Besides `/stats` (the process's memory, from `_child_acceptor.ts`), it
 * answers `GET /broadcast?n=&size=` (broadcasts `n` strings of `size` characters to `room`, one
 * after the other) and `GET /closes` (every peer's close code and reason so far).
 * @module
 */
import { Acceptor, memoryHistory } from 'muxws/acceptor';
import { childAcceptor, type ChildApp } from './_child_acceptor.ts';

/** Builds the recovery child's acceptor with `idleTimeoutMs`. */
export function recoveryChild(idleTimeoutMs: number): ChildApp {
  // Only its `/stats` is used: it measures this process, whichever acceptor runs in it.
  const measured = childAcceptor(idleTimeoutMs);
  const closes: Array<{ code: number; reason: string }> = [];
  const acceptor = new Acceptor({
    idleTimeoutMs,
    history: memoryHistory({ maxEntries: 20 }),
    onPeer: (peer) => void peer.tags.add('room'),
    onPeerClose: (_, { code, reason }) => void closes.push({ code, reason }),
    onError: () => {},
  });

  async function broadcast(n: number, size: number): Promise<Response> {
    const text = 'x'.repeat(size);
    let reached = 0;
    for (let i = 0; i < n; i++) reached += await acceptor.broadcast('room', `${i}${text}`);
    return Response.json({ reached, peers: acceptor.stats.peers });
  }

  function control(request: Request): Promise<Response> | Response | undefined {
    const url = new URL(request.url);
    if (url.pathname === '/broadcast') {
      return broadcast(Number(url.searchParams.get('n')), Number(url.searchParams.get('size')));
    }
    if (url.pathname === '/closes') return Response.json({ closes, peers: acceptor.stats.peers });
    return measured.control(request);
  }
  return { acceptor, control };
}
