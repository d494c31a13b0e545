import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Password hashes: scrypt (node:crypto) in a self-describing format,
 * `scrypt$<N>$<r>$<p>$<salt base64>$<hash base64>`, so the cost can be raised later without
 * invalidating the hashes already written. The default is OWASP's recommendation for scrypt
 * (N=2^17, r=8, p=1: 128 MiB and a few hundred ms per check); comparison is constant-time.
 */

export interface ScryptParams {
  /** CPU/memory cost, a power of two. */
  readonly N: number;
  /** Block size. */
  readonly r: number;
  /** Parallelization. */
  readonly p: number;
}

export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 17, r: 8, p: 1 };
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Bounds a hash's parameters must lie in: a crafted users file must not make a check take minutes. */
const LIMITS = { minN: 2 ** 10, maxN: 2 ** 20, maxR: 32, maxP: 16 };

export interface PasswordHash {
  readonly params: ScryptParams;
  readonly salt: Buffer;
  readonly hash: Buffer;
}

export class PasswordHashFormatError extends Error {}

function scrypt(password: string, salt: Buffer, params: ScryptParams, keylen: number): Promise<Buffer> {
  const options: ScryptOptions = {
    N: params.N,
    r: params.r,
    p: params.p,
    // Node's default maxmem (32 MiB) is below what N=2^17, r=8 needs (128 * N * r bytes).
    maxmem: 256 * params.N * params.r + 1024 * 1024,
  };
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFC'), salt, keylen, options, (error, key) => {
      if (error === null) resolve(key);
      else reject(error);
    });
  });
}

function checkParams(params: ScryptParams): void {
  const { N, r, p } = params;
  const powerOfTwo = Number.isInteger(N) && N > 1 && (N & (N - 1)) === 0;
  if (!powerOfTwo || N < LIMITS.minN || N > LIMITS.maxN)
    throw new PasswordHashFormatError(`N must be a power of two from 2^10 to 2^20 (got ${N})`);
  if (!Number.isInteger(r) || r < 1 || r > LIMITS.maxR)
    throw new PasswordHashFormatError(`r must be 1 to ${LIMITS.maxR} (got ${r})`);
  if (!Number.isInteger(p) || p < 1 || p > LIMITS.maxP)
    throw new PasswordHashFormatError(`p must be 1 to ${LIMITS.maxP} (got ${p})`);
}

/** A new hash of `password` with a random salt, in the stored format. */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  checkParams(params);
  const salt = randomBytes(SALT_BYTES);
  const hash = await scrypt(password, salt, params, KEY_BYTES);
  return formatHash({ params, salt, hash });
}

export function formatHash(h: PasswordHash): string {
  return [
    'scrypt',
    h.params.N,
    h.params.r,
    h.params.p,
    h.salt.toString('base64'),
    h.hash.toString('base64'),
  ].join('$');
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Reads a stored hash; throws PasswordHashFormatError saying what is wrong (never echoing it). */
export function parseHash(text: string): PasswordHash {
  const parts = text.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt')
    throw new PasswordHashFormatError('not a scrypt$N$r$p$salt$hash hash');
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  if (![n, r, p].every((v) => /^\d{1,8}$/.test(v)))
    throw new PasswordHashFormatError('N, r and p must be integers');
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  checkParams(params);
  if (!BASE64.test(salt) || !BASE64.test(hash))
    throw new PasswordHashFormatError('salt and hash must be base64');
  const saltBytes = Buffer.from(salt, 'base64');
  const hashBytes = Buffer.from(hash, 'base64');
  if (saltBytes.length < 8) throw new PasswordHashFormatError('the salt must have at least 8 bytes');
  if (hashBytes.length < 16 || hashBytes.length > 64)
    throw new PasswordHashFormatError('the hash must have 16 to 64 bytes');
  return { params, salt: saltBytes, hash: hashBytes };
}

/** Whether `password` matches `stored`, compared in constant time. */
export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  const computed = await scrypt(password, stored.salt, stored.params, stored.hash.length);
  return timingSafeEqual(computed, stored.hash);
}

/**
 * A hash nobody's password matches, with the given cost: an unknown username is checked against it
 * so that it takes as long as a wrong password (no user enumeration by timing).
 */
export function decoyHash(params: ScryptParams): PasswordHash {
  return { params, salt: randomBytes(SALT_BYTES), hash: randomBytes(KEY_BYTES) };
}
