/**
 * Password hashing: Argon2id through the maintained native binding `argon2`.
 * 64 MiB, 3 passes, 1 lane is above OWASP's minimum (19 MiB, 2 passes, 1 lane) and costs about
 * 150 ms on one core here; hashing runs on libuv's thread pool, off the event loop.
 */
import argon2 from 'argon2';

export const ARGON2_PARAMS = { type: argon2.argon2id, memoryCost: 65_536, timeCost: 3, parallelism: 1 } as const;

export async function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, ARGON2_PARAMS);
}

/** Whether the password matches; a malformed stored hash counts as no match rather than an error. */
export async function verifyPassword(hash: string, password: string): Promise<boolean> {
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}

/** Whether a stored hash was made with weaker parameters than today's, so sign-in can upgrade it. */
export function needsRehash(hash: string): boolean {
  return argon2.needsRehash(hash, ARGON2_PARAMS);
}

let dummyHash: Promise<string> | undefined;

/**
 * Sign-in for an unknown email verifies against this hash, so it takes as long as a wrong password
 * for a real account and timing does not tell which emails exist.
 */
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword('not a password of anyone');
  return dummyHash;
}
