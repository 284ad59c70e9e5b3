/**
 * Request bodies with a size limit (README, Choices: request limits). A body is refused with 413
 * `payload_too_large` as soon as its declared Content-Length, or the bytes received so far, exceed the
 * limit: never buffered past it, and never read to its end.
 *
 * On refusal the stream is left as it is (locked, not cancelled). Cancelling would destroy the
 * connection under the client's feet, so a client still sending would see a reset instead of the
 * 413; left alone, node:http stops reading that connection (TCP back-pressure) while the answer goes
 * out, and the client can read it and stop. A client that keeps the connection open anyway is closed
 * at the server's request timeout.
 */
import { ServiceError } from './errors.js';

/** 413 `payload_too_large` for a limit of `max` bytes. */
export function payloadTooLarge(max: number): ServiceError {
  return new ServiceError('payload_too_large', 413, `The request body exceeds ${max} bytes.`);
}

/** The whole body of `request` (empty when it has none); throws 413 `payload_too_large` past `max` bytes (see module doc). */
export async function readBodyLimited(request: Request, max: number): Promise<Uint8Array<ArrayBuffer>> {
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const declared = request.headers.get('content-length')?.trim();
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > max) {
    // One pending read marks the body as being consumed, so node:http does not read the rest to discard it.
    reader.read().catch(() => undefined);
    throw payloadTooLarge(max);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) throw payloadTooLarge(max);
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}
