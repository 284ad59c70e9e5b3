/**
 * The SSRF guard's rules (src/lib/egress-guard.ts; docs/alerts.md, "Where a webhook may point"): which addresses and
 * host names are refused, and the lookup that pins a connection to the addresses it checked.
 */
import { describe, expect, it } from 'vitest';
import { addressProblem, AddressNotAllowedError, guardedLookup, hostNameProblem } from '../../src/lib/egress-guard.js';

describe('addressProblem', () => {
  it('names the range of every non-public address', () => {
    const cases: [string, string][] = [
      ['127.0.0.1', 'loopback'],
      ['127.255.1.2', 'loopback'],
      ['10.0.0.5', 'private'],
      ['172.16.0.1', 'private'],
      ['172.31.255.255', 'private'],
      ['192.168.0.1', 'private'],
      ['169.254.169.254', 'linkLocal'],
      ['0.0.0.0', 'unspecified'],
      ['0.1.2.3', 'unspecified'],
      ['100.64.0.1', 'carrierGradeNat'],
      ['198.18.0.1', 'benchmarking'],
      ['192.0.2.1', 'reserved'],
      ['240.0.0.1', 'reserved'],
      ['224.0.0.1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['::1', 'loopback'],
      ['[::1]', 'loopback'],
      ['::', 'unspecified'],
      ['fe80::1', 'linkLocal'],
      ['fc00::1', 'uniqueLocal'],
      ['fd12:3456:789a::1', 'uniqueLocal'],
      ['fec0::1', 'siteLocal'],
      ['ff02::1', 'multicast'],
      ['2001:db8::1', 'reserved'],
      ['2001:0:4136:e378::1', 'teredo'],
      ['::7f00:1', 'ipv4Compatible'],
      ['100::1', 'discard'],
      // IPv6 forms carrying an IPv4 address are judged by it.
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:a00:5', 'private'],
      ['::ffff:0:a9fe:a9fe', 'linkLocal'],
      ['64:ff9b::a9fe:a9fe', 'linkLocal'],
      ['2002:c0a8:0101::1', 'private'],
    ];
    for (const [address, range] of cases) expect(addressProblem(address), address).toBe(range);
  });

  it('passes public addresses, IPv6 forms of public IPv4 ones included', () => {
    for (const address of ['8.8.8.8', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
      expect(addressProblem(address), address).toBeNull();
    }
    expect(addressProblem('example.com')).toBe('not an IP address');
  });
});

describe('hostNameProblem (registration, no lookup)', () => {
  it('refuses non-public IP literals and local names; passes public ones', () => {
    for (const host of ['127.0.0.1', '[::1]', '[::ffff:7f00:1]', '10.1.2.3', '169.254.169.254', 'localhost', 'localhost.', 'a.b.localhost', 'printer.local', 'metadata.google.internal', 'metadata', 'intranet']) {
      expect(hostNameProblem(host), host).not.toBeNull();
    }
    expect(hostNameProblem('10.1.2.3')).toBe('10.1.2.3 is a private address');
    expect(hostNameProblem('[::1]')).toBe('::1 is a loopback address');
    for (const host of ['example.com', 'hooks.example.com', 'hooks.example.test', '93.184.215.14', '[2606:4700:4700::1111]', 'example.com.']) expect(hostNameProblem(host), host).toBeNull();
  });
});

describe('guardedLookup (delivery)', () => {
  const ask = (lookup: ReturnType<typeof guardedLookup>, all: boolean) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) => lookup('hooks.example.test', { all }, (err, address, family) => resolve({ err, address, family })));

  it('answers the addresses it resolved and checked, one or all as asked', async () => {
    const lookup = guardedLookup(async () => [{ address: '93.184.215.14', family: 4 }, { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 }], false);
    expect(await ask(lookup, false)).toEqual({ err: null, address: '93.184.215.14', family: 4 });
    expect((await ask(lookup, true)).address).toEqual([{ address: '93.184.215.14', family: 4 }, { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 }]);
  });

  it('refuses the name when any address is not public; allowPrivate lets it through', async () => {
    const resolve = async () => [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.5', family: 4 }];
    const refused = await ask(guardedLookup(resolve, false), true);
    expect(refused.err).toBeInstanceOf(AddressNotAllowedError);
    expect(refused.err!.message).toBe('address not allowed: 10.0.0.5');
    expect((await ask(guardedLookup(resolve, true), true)).err).toBeNull();
  });

  it('passes resolver failures on', async () => {
    const failed = await ask(guardedLookup(async () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })), false), false);
    expect(failed.err?.code).toBe('ENOTFOUND');
  });
});
