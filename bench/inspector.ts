/**
 * The inspector of a server process started with `--inspect=127.0.0.1:0` (Chrome DevTools Protocol over a
 * WebSocket), for the benchmarks that read the server's memory right after a full collection (bench/live.ts,
 * bench/soak.ts) or sample its allocations.
 */
import WebSocket from 'ws';

/** A session with one inspector: `post` sends one command and resolves with its result (rejects with its error). */
export interface InspectorSession {
  post(method: string, params?: Record<string, unknown>): Promise<unknown>;
  close(): void;
}

/**
 * The inspector's WebSocket address, read from the server's output ("Debugger listening on ws://...").
 * Throws when the output holds none (the server was not started with `--inspect`).
 */
export function inspectorUrlOf(output: string): string {
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
  if (!url) throw new Error(`no inspector address in the server output:\n${output}`);
  return url;
}

/** Opens a session with the inspector at `url` (see inspectorUrlOf). */
export async function openInspector(url: string): Promise<InspectorSession> {
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let nextId = 1;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    const w = message.id === undefined ? undefined : waiting.get(message.id);
    if (!w) return;
    waiting.delete(message.id!);
    if (message.error) w.reject(new Error(message.error.message));
    else w.resolve(message.result);
  });
  return {
    post: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        waiting.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params }));
      }),
    close: () => socket.close(),
  };
}

/**
 * Two full garbage collections in the server (HeapProfiler.collectGarbage; the second frees what the first
 * only finalized), then the heap it uses (Runtime.getHeapUsage): the live set, in bytes, whenever the
 * collector last ran on its own.
 */
export async function liveHeapBytes(url: string): Promise<number> {
  const session = await openInspector(url);
  try {
    await session.post('HeapProfiler.collectGarbage');
    await session.post('HeapProfiler.collectGarbage');
    const { usedSize } = (await session.post('Runtime.getHeapUsage')) as { usedSize: number };
    return usedSize;
  } finally {
    session.close();
  }
}

/** Two full garbage collections in the server, as liveHeapBytes, without reading the heap. */
export async function collectGarbage(url: string): Promise<void> {
  await liveHeapBytes(url);
}
