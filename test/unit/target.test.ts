/**
 * The request target without the URL parser (src/lib/target.ts): whenever it answers, it must give exactly
 * what `new URL` gives (path and every query parameter); it answers for the plain targets clients send.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { KnownHosts, plainTarget } from '../../src/lib/target.js';

const viaUrl = (raw: string, host: string) => {
  const u = new URL(raw, `http://${host}`);
  return { pathname: u.pathname, params: [...u.searchParams] };
};

describe('plainTarget', () => {
  it('answers the targets the clients of the hot routes send, as new URL would', () => {
    const hosts = new KnownHosts();
    for (const raw of [
      '/prices?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)',
      '/prices?market_hash_name=AK-47+%7C+Redline&markets=buff163,c5game&side=ask',
      '/websites/buff163',
      '/prices/batch',
      '/health',
      '/prices?a=1&a=2&b=',
      '/prices?',
    ]) {
      const t = plainTarget(raw, '127.0.0.1:8080', hosts);
      expect(t, raw).not.toBeNull();
      expect({ pathname: t!.pathname, params: [...t!.searchParams] }).toEqual(viaUrl(raw, '127.0.0.1:8080'));
    }
  });

  it('leaves to the URL parser what it would change: dot segments, backslashes, fragments, spaces, non-ASCII, odd hosts', () => {
    const hosts = new KnownHosts();
    for (const raw of ['/prices/../health', '/a/./b', '/a/%2E%2e/b', '/a\\b', '/prices#x', '/prices?x=a b', '/prices?x=é', 'prices', '*']) {
      expect(plainTarget(raw, 'localhost', hosts), raw).toBeNull();
    }
    expect(plainTarget('/health', 'LOCALHOST', hosts)).toBeNull(); // the parser lower-cases it
    expect(plainTarget('/health', 'localhost:80', hosts)).toBeNull(); // the parser drops the default port
    expect(plainTarget('/health', 'bad host', hosts)).toBeNull();
    expect(plainTarget('/health', undefined, hosts)).toBeNull();
  });

  it('never disagrees with new URL on generated targets', () => {
    const hosts = new KnownHosts();
    const piece = fc.constantFrom('a', 'Z', '0', '-', '.', '_', '~', '%', '%2e', '%2E', '%20', '%7C', '+', '&', '=', '?', '/', '//', '..', ':', '@', '!', "'", '(', ')', '*', ',', ';', '$', ' ', '#', '\\', 'é', '%zz');
    let answered = 0;
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 16 }), fc.constantFrom('localhost', '127.0.0.1:3000', 'example.com', '[::1]:8080'), (parts, host) => {
        const raw = '/' + parts.join('');
        const t = plainTarget(raw, host, hosts);
        let expected: ReturnType<typeof viaUrl>;
        try {
          expected = viaUrl(raw, host);
        } catch {
          expect(t).toBeNull();
          return;
        }
        if (t === null) return;
        answered++;
        expect({ pathname: t.pathname, params: [...t.searchParams] }).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
    expect(answered).toBeGreaterThan(300);
  });
});
