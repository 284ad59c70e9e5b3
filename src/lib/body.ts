/**
 * Request bodies with a size limit (README, Choices: request limits). A body is refused with 413
 * `payload_too_large` as soon as its declared Content-Length, or the bytes received so far, exceed the
 * limit: never buffered past it.
 *
 * After a refusal the connection must stay usable for a pooled keep-alive client (its next request
 * must not wait behind the unread rest of the refused body). So the rest is drained in the
 * background, read and dropped, up to DRAIN_MAX_BYTES beyond the limit; the connection then carries
 * on. A body declared larger than that is not read at all: the 413 says `Connection: close` and
 * Node closes the connection once the answer is out. A chunked body that passes the drain budget is
 * cut off (the connection is closed) after the 413 went out.
 */
import { ServiceError } from './errors.js';

/** Bytes past the limit that are read and dropped after a 413 to keep the connection usable (8 MiB). */
const DRAIN_MAX_BYTES = 8 * 1024 * 1024;

/** 413 `payload_too_large` for a limit of `max` bytes; `close` adds `Connection: close` (the body is left unread). */
function payloadTooLarge(max: number, close = false): ServiceError {
  return new ServiceError('payload_too_large', 413, `The request body exceeds ${max} bytes.`, undefined, close ? { Connection: 'close' } : {});
}

/** Reads and drops the rest of a refused body in the background, at most `budget` bytes; past that the stream is cancelled. */
function drain(reader: ReadableStreamDefaultReader<Uint8Array>, budget: number): void {
  void (async () => {
    let left = budget;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        left -= value.byteLength;
        if (left < 0) {
          await reader.cancel();
          return;
        }
      }
    } catch {
      // the client went away: nothing left to drain
    }
  })();
}

/** The whole body of `request` (empty when it has none); throws 413 `payload_too_large` past `max` bytes (see module doc). */
export async function readBodyLimited(request: Request, max: number): Promise<Uint8Array<ArrayBuffer>> {
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  const declared = request.headers.get('content-length')?.trim();
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > max) {
    if (Number(declared) <= max + DRAIN_MAX_BYTES) {
      drain(reader, Number(declared));
      throw payloadTooLarge(max);
    }
    // Too large to drain: one pending read marks the body as being consumed, so node:http does not read
    // the rest to discard it; the connection closes after the answer.
    reader.read().catch(() => undefined);
    throw payloadTooLarge(max, true);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      drain(reader, DRAIN_MAX_BYTES);
      throw payloadTooLarge(max);
    }
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

/**
 * `readBodyLimited` for node:http's request stream (the REST fast path in app.ts), with the same rules:
 * 413 `payload_too_large` past `max` bytes, as soon as the declared Content-Length or the bytes received
 * exceed it; the rest drained up to DRAIN_MAX_BYTES so a keep-alive connection stays usable; a body
 * declared larger than that is left unread and the 413 carries `Connection: close`.
 */
export async function readNodeBodyLimited(req: import('node:http').IncomingMessage, max: number): Promise<Buffer> {
  const declared = req.headers['content-length']?.trim();
  const drainRest = (budget: number) => {
    let left = budget;
    req.on('data', (chunk: Buffer) => {
      left -= chunk.byteLength;
      if (left < 0) req.destroy();
    });
    req.on('error', () => undefined);
    req.resume();
  };
  if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > max) {
    if (Number(declared) <= max + DRAIN_MAX_BYTES) {
      drainRest(Number(declared));
      throw payloadTooLarge(max);
    }
    throw payloadTooLarge(max, true);
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > max) {
        req.off('data', onData);
        req.off('end', onEnd);
        drainRest(DRAIN_MAX_BYTES);
        reject(payloadTooLarge(max));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(Buffer.concat(chunks, size));
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', reject);
  });
}
