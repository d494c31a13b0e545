import { isIP } from 'node:net';

/**
 * Which client a sign-in comes from, for the per-address rate limit. With TRUST_PROXY naming the
 * proxy in front, Express resolves `req.ip` from X-Forwarded-For and that is the client. Without it
 * (or with a TRUST_PROXY that does not cover the peer), a request carrying X-Forwarded-For came
 * through a proxy this service was not told to trust: `req.ip` is the proxy's address, the same for
 * every user behind it, and counting sign-ins under it alone would let one user's failures (or an
 * attacker's) lock everybody out. The address that proxy forwarded (the header's last entry, the
 * one the nearest proxy added) is then counted with it, so users behind one proxy are counted
 * apart. It is a claim: a client that reaches the service directly can send any. So it only ever
 * splits the per-address window; the per-username window stays keyed by `req.ip` alone, which no
 * header changes (see the task proxy README, "Behind a proxy").
 */

export interface ClientAddress {
  /** The per-address window's key. */
  readonly key: string;
  /** The request carried X-Forwarded-For that was not used (no TRUST_PROXY for its peer). */
  readonly untrustedForward: boolean;
}

export function clientAddress(input: {
  /** `req.ip`: the client as Express resolved it (the peer without a trusted proxy). */
  readonly ip: string | undefined;
  /** The TCP peer (`req.socket.remoteAddress`). */
  readonly peer: string | undefined;
  readonly forwardedFor: string | string[] | undefined;
}): ClientAddress {
  const ip = input.ip ?? input.peer ?? 'unknown';
  const header = Array.isArray(input.forwardedFor) ? input.forwardedFor.join(',') : input.forwardedFor;
  // Express used the header when it resolved a client other than the peer.
  if (header === undefined || header.trim() === '' || ip !== input.peer) {
    return { key: ip, untrustedForward: false };
  }
  const last = header.slice(-64).split(',').at(-1)?.trim() ?? '';
  return { key: isIP(last) === 0 ? ip : `${ip} for ${last}`, untrustedForward: true };
}
