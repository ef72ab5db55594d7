/**
 * The Node recipe of `examples/demo.ts`, shared by the bench servers: a `node:http` server's
 * WebSocket upgrades go through muxws/node's `attach()` (`checkUpgrade()`, then `ws`'s
 * `handleUpgrade()` into `accept()`), so the bench measures the adapter an application uses.
 *
 * @module
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Acceptor } from 'muxws/acceptor';
import { attach, type Attachment } from 'muxws/node';

/**
 * Serves `server`'s upgrades with the acceptor `current()` returns, read at each upgrade (so a
 * bench may put a fresh acceptor in place after a GOAWAY): each acceptor gets its own attachment,
 * fed from one `upgrade` listener, and the retired one stops taking upgrades while its sockets
 * stay open.
 */
export function acceptUpgrades<Api>(server: Server, current: () => Acceptor<Api>): void {
  // attach() listens on what it is given; the relay hands it the upgrades meant for it.
  const relay = new EventEmitter();
  let attached: Acceptor<Api> | undefined;
  let attachment: Attachment | undefined;
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const acceptor = current();
    if (acceptor !== attached) {
      attachment?.close();
      attachment = attach(relay as unknown as Server, acceptor);
      attached = acceptor;
    }
    relay.emit('upgrade', req, socket, head);
  });
}
