/**
 * Paid downloads (README, Billing: "a file is paid for when it is delivered"): a stream wrapper that
 * tells when a body was not delivered whole, so its charge can be refunded.
 */

/** Why a delivery did not complete: the source failed, the consumer cancelled, or the client left. */
export type UndeliveredReason = 'read_error' | 'cancelled' | 'client_gone';

/**
 * Passes `source` through unchanged and calls `onUndelivered` once when the body is not delivered
 * whole: a read error of the source (the error is then passed on to the consumer), a consumer that
 * cancels, or `signal` aborting (the HTTP server adapter aborts a request's signal when the
 * connection closes before the response finished). `onUndelivered` never runs after the last byte
 * was handed to the server and the response finished; its own errors are swallowed (it should log).
 * With `expectedBytes` (the Content-Length sent), a source that ends short of it is a read error too.
 */
export function deliveryStream(
  source: ReadableStream<Uint8Array>,
  signal: AbortSignal | undefined,
  onUndelivered: (reason: UndeliveredReason) => Promise<void>,
  expectedBytes?: number,
): ReadableStream<Uint8Array> {
  let delivered = 0;
  let settled = false;
  const undelivered = (reason: UndeliveredReason) => {
    if (settled) return;
    settled = true;
    signal?.removeEventListener('abort', onAbort);
    void onUndelivered(reason).catch(() => undefined);
  };
  const onAbort = () => undelivered('client_gone');
  if (signal?.aborted) undelivered('client_gone');
  else signal?.addEventListener('abort', onAbort, { once: true });
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        undelivered('read_error');
        controller.error(e);
        return;
      }
      if (chunk.done) {
        if (expectedBytes !== undefined && delivered !== expectedBytes) {
          undelivered('read_error');
          controller.error(new Error(`the body ended after ${delivered} of ${expectedBytes} bytes`));
          return;
        }
        controller.close();
        return;
      }
      delivered += chunk.value.byteLength;
      controller.enqueue(chunk.value);
    },
    async cancel(reason) {
      undelivered('cancelled');
      await reader.cancel(reason).catch(() => undefined);
    },
  });
}
