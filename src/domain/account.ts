/**
 * Dashboard accounts: sign-up and sign-in inputs, the signed-in view, and the session token format.
 * A session token is like an API key (256 random bits, only its SHA-256 stored) but is never accepted
 * where an API key is, and the other way round: they have different shapes and different stores.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ZEmail } from './email';
import { PLANS } from './plan';
import { ZRole } from './roles';
import { text } from './text';

export { ZEmail };

/** NIST SP 800-63B: at least 8 characters; we ask for 12 and cap the length only against abuse. */
export const PASSWORD_LIMITS = { min: 12, max: 256 } as const;

// Its messages, like every schema's bounds, are worded in one place: domain/validation.ts.
export const ZNewPassword = text().min(PASSWORD_LIMITS.min).max(PASSWORD_LIMITS.max);

export const ZSignupInput = z.strictObject({
  email: ZEmail,
  password: ZNewPassword,
  organization_name: text().trim().min(1).max(100),
});
export type TSignupInput = z.infer<typeof ZSignupInput>;

/** Sign-in does not apply the sign-up rules: a wrong-shaped password is simply a wrong password. */
export const ZLoginInput = z.strictObject({
  email: text().trim().max(254).transform((email) => email.toLowerCase()),
  password: text().max(PASSWORD_LIMITS.max),
});
export type TLoginInput = z.infer<typeof ZLoginInput>;

export const ZAccountView = z.object({
  account: z.object({ id: z.string(), email: z.string(), created_at: z.string() }),
  /** The organization this session acts in, and the member's role there. */
  organization: z.object({ id: z.string(), name: z.string(), plan: z.enum(PLANS), monthly_cap: z.number().int() }),
  role: ZRole,
  /** Every organization the account belongs to, to switch between. */
  organizations: z.array(z.object({ id: z.string(), name: z.string(), role: ZRole })),
});
export type TAccountView = z.infer<typeof ZAccountView>;

const SESSION_TOKEN = /^als_[A-Za-z0-9_-]{43}$/;

export function generateSessionToken(): { token: string; hash: string } {
  const token = `als_${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashSessionToken(token) };
}

export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function looksLikeSessionToken(token: string): boolean {
  return SESSION_TOKEN.test(token);
}
