/**
 * The `Retry-After` header of an HTTP refusal at upgrade (RFC 9110 §10.2.3), for the dialer's
 * redial loop. Internal: only the WebSocket transport (`lib/dialer/_transport.ts`) uses it.
 *
 * @module
 */

/**
 * How long `Retry-After` asks the client to wait, in milliseconds: `delay-seconds` (digits only)
 * times 1000, or an HTTP date minus `now` (0 when it has passed).
 *
 * @param value The header's value; `undefined` when there was none.
 * @param now The current epoch ms, for an HTTP date.
 * @returns The wait, or `undefined` for a missing or unparsable value.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date has a day or month name; digits alone were handled above.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
