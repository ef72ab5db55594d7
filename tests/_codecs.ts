/**
 * The codecs every session suite runs over. Another codec joins by being added here.
 */
import { type Codec, jsonCodec } from 'muxws';
import { msgpackCodec } from '../lib/msgpack.ts';

/** Every codec the session suites are parametrized over. */
export const codecs: Codec[] = [jsonCodec, msgpackCodec];
