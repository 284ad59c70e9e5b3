/**
 * The egress guard of outgoing requests to addresses chosen by users (webhook alerts, docs/alerts.md "Where a webhook
 * may point"; issue 44, point 1): a server-side request forgery guard. A user-chosen URL must not make the service
 * connect to itself, its private network or a cloud metadata service.
 *
 * Rules (the ranges are classified by ipaddr.js, `range()`; an address is public when it is `unicast` there and not
 * in EXTRA_NON_PUBLIC below):
 * - Non-public IPv4: 0.0.0.0/8, 10/8, 100.64/10 (carrier-grade NAT), 127/8, 169.254/16 (link-local, the cloud
 *   metadata address 169.254.169.254), 172.16/12, 192.0.0/24, 192.0.2/24, 192.88.99/24, 192.168/16, 198.18/15,
 *   198.51.100/24, 203.0.113/24, 224/4 (multicast), 240/4 and 255.255.255.255.
 * - Non-public IPv6: ::, ::1, ::/96 (IPv4-compatible), 100::/64 (discard), fe80::/10 (link-local), fec0::/10
 *   (site-local), fc00::/7 (unique-local), ff00::/8 (multicast), 2001:db8::/32 (documentation), 2001::/32 (Teredo).
 * - IPv6 forms that carry an IPv4 address are judged by that address: IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 *   `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d` and 6to4 `2002:aabb:ccdd::/48`.
 * - Host names refused without a lookup (`hostNameProblem`): `localhost` and `*.localhost` (RFC 6761), `*.local`
 *   (mDNS), `*.internal` (cloud-internal names such as metadata.google.internal) and single-label names (resolved
 *   through the machine's search domains).
 * - At connection time (`guardedLookup`, used by `guardedAgent`): the host name is resolved once, every address it
 *   resolves to is judged, and the connection goes to those checked addresses only (the lookup answers the socket
 *   itself), so a name cannot resolve to a public address for the check and to a private one for the connection
 *   (DNS rebinding). One non-public address refuses the whole name.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

/**
 * Ranges ipaddr.js 1.9.1 classifies as `unicast` that are not public: IPv4 198.18.0.0/15 (benchmarking, RFC 2544);
 * IPv6 ::/96 (IPv4-compatible, deprecated), 100::/64 (discard, RFC 6666), fec0::/10 (site-local, deprecated).
 */
const EXTRA_NON_PUBLIC: ReadonlyArray<readonly [string, [ipaddr.IPv4 | ipaddr.IPv6, number]]> = [
  ['benchmarking', ipaddr.parseCIDR('198.18.0.0/15')],
  ['ipv4Compatible', ipaddr.parseCIDR('::/96')],
  ['discard', ipaddr.parseCIDR('100::/64')],
  ['siteLocal', ipaddr.parseCIDR('fec0::/10')],
];

/** The IPv4 address an IPv6 address carries (mapped, translated, NAT64, 6to4), or null. */
function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = a.parts;
  switch (a.range()) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
    case '6to4':
      return new ipaddr.IPv4([p[1]! >> 8, p[1]! & 0xff, p[2]! >> 8, p[2]! & 0xff]);
    default:
      return null;
  }
}

/**
 * Why `address` (an IPv4 or IPv6 literal, IPv6 with or without brackets or a zone) is not a public address: the
 * range's name (`loopback`, `private`, `linkLocal`, `uniqueLocal`, `unspecified`, ...), or null when it is public.
 * Text that is not an IP address: `not an IP address`.
 */
export function addressProblem(address: string): string | null {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(text)) return 'not an IP address';
  let parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv6') parsed = embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed;
  const range = parsed.range();
  if (range !== 'unicast') return range;
  for (const [name, cidr] of EXTRA_NON_PUBLIC) if (cidr[0].kind() === parsed.kind() && (parsed as ipaddr.IPv4).match(cidr as [ipaddr.IPv4, number])) return name;
  return null;
}

/** True when `host` (a URL's hostname, IPv6 in brackets or not) is an IP literal rather than a name. */
export function isIpLiteral(host: string): boolean {
  return net.isIP(host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host) !== 0;
}

/**
 * Why a URL's `hostname` (as WHATWG URL normalises it: lower case, IPv4 in dotted decimal, IPv6 in brackets) may not
 * be the target of a user-chosen request, judged without a lookup; null when it may (a name is judged again on each
 * connection, by `guardedLookup`). See the module doc for the rules.
 */
export function hostNameProblem(hostname: string): string | null {
  const host = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  if (isIpLiteral(host)) {
    const problem = addressProblem(host);
    return problem === null ? null : `${host.replace(/^\[|\]$/g, '')} is a ${problem} address`;
  }
  const name = host.toLowerCase();
  if (name === 'localhost' || name.endsWith('.localhost')) return `${name} is a local name`;
  if (name.endsWith('.local') || name.endsWith('.internal')) return `${name} is a local or internal name`;
  if (!name.includes('.')) return `${name} is a single-label name (it would resolve through the local search domains)`;
  return null;
}

/** The error of a connection the guard refused: `address not allowed: <address>` (code EADDRNOTALLOWED). */
export class AddressNotAllowedError extends Error {
  readonly code = 'EADDRNOTALLOWED';
  constructor(readonly address: string, readonly range: string) {
    super(`address not allowed: ${address}`);
    this.name = 'AddressNotAllowedError';
  }
}

/** Resolves a host name to its addresses (every one, both families): dns.lookup by default; tests inject their own. */
export type ResolveHost = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** The system resolver (getaddrinfo, as Node's sockets use), every address in its order. */
export const systemResolve: ResolveHost = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** The callback of a `net.connect` lookup function (one address, or every address when asked with `all`). */
type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` function for net/tls `connect` that resolves with `resolve`, refuses (AddressNotAllowedError) when any
 * address is not public (unless `allowPrivate`), and answers the socket only the addresses it checked. An IP literal
 * is never passed to a lookup by Node: `guardedAgent` checks those itself.
 */
export function guardedLookup(resolve: ResolveHost, allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (found) => {
        const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
        const addresses = found.filter((a) => !family || a.family === family);
        if (addresses.length === 0) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }), '');
          return;
        }
        if (!allowPrivate) {
          for (const a of addresses) {
            const problem = addressProblem(a.address);
            if (problem !== null) {
              callback(new AddressNotAllowedError(a.address, problem), '');
              return;
            }
          }
        }
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/** What one guarded connection attempt reached: `connected` once a socket to the receiver was open (TLS done). */
export interface EgressState {
  connected: boolean;
}

/**
 * An undici Agent for one user-chosen request: its connections resolve names through `guardedLookup` (DNS rebinding
 * cannot slip a private address between check and connection), refuse non-public IP literals, give up connecting
 * after `connectTimeoutMs`, and set `state.connected` once a connection is open (the request's body is written on
 * it at once: docs/alerts.md, Billing). `allowPrivate` turns the address checks off (local receivers, tests).
 * Close it (`destroy()`) after the request.
 */
export function guardedAgent(opts: { allowPrivate: boolean; resolve?: ResolveHost; connectTimeoutMs: number; state: EgressState }): Agent {
  const connect = buildConnector({ timeout: opts.connectTimeoutMs, lookup: guardedLookup(opts.resolve ?? systemResolve, opts.allowPrivate) });
  return new Agent({
    connections: 1,
    pipelining: 1,
    connect: (options, callback) => {
      const host = options.hostname;
      const problem = opts.allowPrivate || !isIpLiteral(host) ? null : addressProblem(host);
      if (problem !== null) {
        callback(new AddressNotAllowedError(host.replace(/^\[|\]$/g, ''), problem), null);
        return;
      }
      connect(options, (...args) => {
        if (args[0] === null) opts.state.connected = true;
        callback(...args);
      });
    },
  });
}

/** The AddressNotAllowedError behind `e` (a fetch failure carries it as its `cause`), or null. */
export function addressRefusal(e: unknown): AddressNotAllowedError | null {
  for (let at: unknown = e, depth = 0; at && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    if (at instanceof AddressNotAllowedError) return at;
  }
  return null;
}
