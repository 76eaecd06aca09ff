/**
 * Minting and checking viewer tokens (domain/viewerToken.ts) with jose. A token is refused when its
 * signature, audience or algorithm is wrong, when it has expired (no leeway), and when the key that
 * minted it has been revoked since: revoking a key ends the viewers it handed out.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { AppError } from '../domain/errors';
import type { Clock } from '../domain/time';
import { VIEWER_AUDIENCE, VIEWER_DEFAULT_MINUTES, type TMintViewerTokenInput, type ViewerClaims } from '../domain/viewerToken';
import type { ApiKeyRepository } from '../db/apiKeyRepository';
import type { ApiKeyPrincipal, ViewerPrincipal } from './auth';

const ALGORITHM = 'HS256';

export class ViewerTokens {
  constructor(
    /** Derived from the ledger's signing key (`keyDerivedFrom`); null where this process has none. */
    private readonly secret: Uint8Array | null,
    private readonly keys: Pick<ApiKeyRepository, 'isActive'>,
    private readonly options: { maxMinutes: number; publicUrl: string | undefined },
    private readonly clock: Clock,
  ) {}

  async mint(principal: ApiKeyPrincipal, input: TMintViewerTokenInput): Promise<{ token: string; expires_at: string; viewer_path: string; viewer_url: string | null }> {
    const secret = this.requireSecret();
    const minutes = input.expires_in_minutes ?? Math.min(VIEWER_DEFAULT_MINUTES, this.options.maxMinutes);
    if (minutes > this.options.maxMinutes) {
      throw new AppError('VALIDATION_FAILED', `Invalid request: expires_in_minutes must be at most ${this.options.maxMinutes}`, { fields: ['expires_in_minutes'] });
    }
    const now = Math.floor(this.clock.now().getTime() / 1000);
    const exp = now + minutes * 60;
    const claims: ViewerClaims = { org: principal.tenant, sub: input.organization_id, kid: principal.keyId, ...(input.actions ? { act: [...new Set(input.actions)] } : {}) };
    const token = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setAudience(VIEWER_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(secret);
    const path = `/viewer?token=${token}`;
    return { token, expires_at: new Date(exp * 1000).toISOString(), viewer_path: path, viewer_url: this.options.publicUrl ? `${this.options.publicUrl.replace(/\/$/, '')}${path}` : null };
  }

  /** The viewer a token grants, or 401 INVALID_VIEWER_TOKEN (the same answer whatever is wrong with it). */
  async verify(token: string | undefined): Promise<ViewerPrincipal> {
    const secret = this.requireSecret();
    if (!token) throw invalid();
    let payload;
    try {
      ({ payload } = await jwtVerify(token, secret, { algorithms: [ALGORITHM], audience: VIEWER_AUDIENCE, currentDate: this.clock.now(), requiredClaims: ['exp', 'iat', 'sub'] }));
    } catch (error) {
      if (error instanceof joseErrors.JOSEError) throw invalid();
      throw error;
    }
    const { org, sub, act, kid, exp } = payload as Partial<ViewerClaims> & { exp: number };
    if (typeof org !== 'string' || typeof sub !== 'string' || typeof kid !== 'string' || (act !== undefined && !(Array.isArray(act) && act.every((a) => typeof a === 'string')))) throw invalid();
    if (!(await this.keys.isActive(kid, org))) throw invalid();
    return { kind: 'viewer', tenant: org, eventOrganizationId: sub, actions: act ?? null, expiresAt: new Date(exp * 1000) };
  }

  private requireSecret(): Uint8Array {
    if (!this.secret) throw new AppError('SERVICE_UNAVAILABLE', 'Viewer tokens need the ledger\'s signing key, which this process does not hold');
    return this.secret;
  }
}

function invalid(): AppError {
  return new AppError('INVALID_VIEWER_TOKEN', 'Invalid or expired viewer token');
}
