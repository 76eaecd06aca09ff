/** API keys as the dashboard manages them: always within the signed-in organization. */
import { z } from 'zod';
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import { text } from '../domain/text';
import { DEFAULT_SCOPES, type Scope, SCOPES } from '../domain/apiKey';
import { canGrant } from '../domain/roles';
import type { Clock } from '../domain/time';
import { apiKeyView, type ApiKeyRepository, type ApiKeyView } from '../db/apiKeyRepository';
import type { ApiKeyAuthenticator, SessionPrincipal } from './auth';
import { actorOf, type SelfAudit } from './selfAudit';

export const ZApiKeyName = text().trim().min(1).max(100);
export const ZCreateApiKeyInput = z.strictObject({
  name: ZApiKeyName,
  /** What the key may do; absent: DEFAULT_SCOPES (never `retention:manage`, which only an owner grants). */
  scopes: z.array(z.enum(SCOPES)).min(1).optional(),
});
export const ZRevokeApiKeyInput = z.strictObject({ id: text().min(1).max(100) });

export class ApiKeyService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly auth: ApiKeyAuthenticator,
    private readonly audit: SelfAudit,
    private readonly clock: Clock,
  ) {}

  /** Creates a key; the answer is the only place its value ever appears. A member grants only the scopes their role may (`canGrant`). */
  async create(principal: SessionPrincipal, name: string, scopes: readonly Scope[] = DEFAULT_SCOPES): Promise<{ key: string; apiKey: ApiKeyView }> {
    const refused = scopes.find((scope) => !canGrant(principal.role, scope));
    if (refused) throw new AppError('INSUFFICIENT_ROLE', `Your role (${principal.role}) does not allow you to grant the scope ${refused}`);
    const { doc, key } = await this.keys.forOrg(principal.tenant).create(name, this.clock.now(), scopes);
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.key.created', { type: 'api_key', id: doc.key_id, name }, { scopes: [...scopes] });
    return { key, apiKey: apiKeyView(doc) };
  }

  async list(principal: SessionPrincipal): Promise<ApiKeyView[]> {
    return (await this.keys.forOrg(principal.tenant).list('newest')).map(apiKeyView);
  }

  /** Revokes at once: the next API request with the key is refused, in this process and every other. */
  async revoke(principal: SessionPrincipal, keyId: string): Promise<ApiKeyView> {
    const doc = await this.keys.forOrg(principal.tenant).revoke(keyId, this.clock.now());
    if (!doc) throw new AppError('API_KEY_NOT_FOUND', ACCOUNT_MESSAGES.apiKeyNotFound);
    this.auth.forget(doc._id);
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.key.revoked', { type: 'api_key', id: doc.key_id, name: doc.name });
    return apiKeyView(doc);
  }
}
