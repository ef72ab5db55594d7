/**
 * The configuration of the child acceptor that `decoded_items.ts` measures, chosen by
 * `MUXWS_CHILD=items` in the child's environment (`_child_acceptor.ts` applies it): a required
 * hello, messages up to 2 MiB (so that the size limit is not what stops 1 MiB messages), the codec
 * named by `MUXWS_CODEC` (`msgpack`, else the default JSON codec), and streams that echo `{ op: 'echo' }` or read
 * every message of `{ op: 'read' }` until the dialer ends it.
 * @module
 */
import process from 'node:process';
import type { AcceptorOptions } from 'muxws/acceptor';
import { msgpackCodec } from 'muxws/msgpack';
import type { Stream } from 'muxws';

/** The largest message the child accepts: twice the default, above the 1 MiB attack messages. */
export const ITEMS_CHILD_MAX_MESSAGE_BYTES = 2 * 1024 * 1024;

/** The child's options when its environment asks for this configuration, else an empty object. */
export function itemsChildOptions(): AcceptorOptions {
  if (process.env.MUXWS_CHILD !== 'items') return {};
  return {
    // JSON: the default codec, which the acceptor counts with the JSON wire's own scan.
    codec: process.env.MUXWS_CODEC === 'msgpack' ? msgpackCodec : undefined,
    limits: { maxMessageBytes: ITEMS_CHILD_MAX_MESSAGE_BYTES },
    requireHello: true,
    onHello: () => 'welcome',
    async onStream(stream: Stream): Promise<unknown> {
      const p = (stream.payload ?? {}) as Record<string, unknown>;
      if (p.op === 'echo') return { echo: p.value };
      let read = 0;
      for await (const _ of stream) read++;
      return read;
    },
  };
}
