/**
 * Viewer tokens: what an application's server mints with an `events:read` key to show one of its
 * customers (one `organization_id` value of its events, optionally some actions) their own trail in
 * the hosted viewer. A JWT (RFC 7519) signed with HMAC-SHA256 under a key derived from the ledger's
 * signing key, so every instance of an installation checks it and none stores it.
 */
import { z } from 'zod';
import { LIMITS } from './event';
import { text } from './text';

export const VIEWER_AUDIENCE = 'audit-ledger/viewer';
export const VIEWER_DEFAULT_MINUTES = 15;

const id = text().min(1).max(LIMITS.id);

export const ZMintViewerTokenInput = z.strictObject({
  organization_id: id.meta({ description: 'The one organization_id value of your events the viewer shows (your customer)' }),
  actions: z.array(id).min(1).max(50).optional().meta({ description: 'Only these actions (default: all of that organization_id\'s events)' }),
  expires_in_minutes: z.number().int().min(1).optional().meta({ description: `Lifetime, default ${VIEWER_DEFAULT_MINUTES}; at most VIEWER_TOKEN_MAX_MINUTES (default 60)` }),
});
export type TMintViewerTokenInput = z.infer<typeof ZMintViewerTokenInput>;

export const ZViewerToken = z.object({
  token: z.string(),
  expires_at: z.string(),
  /** `/viewer?token=…`: put your origin for this installation in front when viewer_url is null (PUBLIC_URL unset). */
  viewer_path: z.string(),
  viewer_url: z.string().nullable(),
});

/** What a token grants, as the viewer page is told. */
export const ZViewerScope = z.object({
  organization_id: z.string(),
  actions: z.array(z.string()).nullable(),
  expires_at: z.string(),
});

/** The claims inside (besides iat, exp, aud): `org` the tenant, `sub` the organization_id value, `act` the actions, `kid` the minting key. */
export interface ViewerClaims {
  org: string;
  sub: string;
  act?: string[];
  kid: string;
}
