/** API keys as the dashboard manages them: always within the signed-in organization. */
import { z } from 'zod';
import { AppError, ACCOUNT_MESSAGES } from '../domain/errors';
import { text } from '../domain/text';
import { DEFAULT_SCOPES, type Scope, SCOPES } from '../domain/apiKey';
import { canGrant } from '../domain/roles';
import type { Clock } from '../domain/time';
import { apiKeyView, type ApiKeyRepository, type ApiKeyView } from '../db/apiKeyRepository';
import type { ApiKeyAuthenticator, ApiKeyPrincipal, SessionPrincipal } from './auth';
import { bindingEntry, type ProducerKeys } from './producerKeys';
import { actorOf, type SelfAudit } from './selfAudit';

export const ZApiKeyName = text().trim().min(1).max(100);
export const ZCreateApiKeyInput = z.strictObject({
  name: ZApiKeyName,
  /** What the key may do; absent: DEFAULT_SCOPES (never `retention:manage`, which only an owner grants). */
  scopes: z.array(z.enum(SCOPES)).min(1).optional(),
});
export const ZRevokeApiKeyInput = z.strictObject({ id: text().min(1).max(100) });
/** A producer's Ed25519 verifier key (C2SP note format); checked by services/producerKeys.ts. */
export const ZProducerKey = text().trim().min(1).max(512).meta({ description: 'The producer\'s Ed25519 verifier key: <name>+<key id>+<base64 key>, as Go\'s note.GenerateKey and the client package make' });
export const ZBindProducerKeyInput = z.strictObject({ id: text().min(1).max(100), producer_key: ZProducerKey });

export class ApiKeyService {
  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly auth: ApiKeyAuthenticator,
    private readonly audit: SelfAudit,
    private readonly clock: Clock,
    private readonly producers: ProducerKeys,
  ) {}

  /** Creates a key; the answer is the only place its value ever appears. A member grants only the scopes their role may (`canGrant`). */
  async create(principal: SessionPrincipal, name: string, scopes: readonly Scope[] = DEFAULT_SCOPES): Promise<{ key: string; apiKey: ApiKeyView }> {
    const refused = scopes.find((scope) => !canGrant(principal.role, scope));
    if (refused) throw new AppError('INSUFFICIENT_ROLE', `Your role (${principal.role}) does not allow you to grant the scope ${refused}`);
    const { doc, key } = await this.keys.forOrg(principal.tenant).create(name, this.clock.now(), scopes);
    await this.audit.record(principal.tenant, actorOf(principal), 'audit_ledger.key.created', { type: 'api_key', id: doc.key_id, name }, { scopes: [...scopes] });
    return { key, apiKey: apiKeyView(doc) };
  }

  /** The keys, each with its producer key (null: unsigned) and whether it can still be bound (it has sent no event). */
  async list(principal: SessionPrincipal): Promise<(ApiKeyView & { producer_key: string | null; producer_bindable: boolean })[]> {
    const [docs, settled] = await Promise.all([this.keys.forOrg(principal.tenant).list('newest'), this.producers.settledIn(principal.tenant)]);
    return docs.map((doc) => ({ ...apiKeyView(doc), producer_key: settled.get(doc.key_id) ?? null, producer_bindable: !settled.has(doc.key_id) && doc.revoked_at === null }));
  }

  /**
   * Binds a key of the principal's organization to a producer key, before its first event (a key binds
   * only itself): from then on the service refuses its events unless the producer signed them.
   */
  async bindProducer(principal: SessionPrincipal | ApiKeyPrincipal, keyId: string, producerKey: string): Promise<{ api_key_id: string; producer_key: string }> {
    if (principal.kind === 'apiKey' && principal.keyId !== keyId) throw new AppError('API_KEY_NOT_FOUND', ACCOUNT_MESSAGES.apiKeyNotFound);
    return this.producers.bind(principal.tenant, keyId, producerKey, (name, text) => {
      const entry = bindingEntry(actorOf(principal), keyId, name, text);
      return this.audit.record(principal.tenant, entry.actor, entry.action, entry.resource, entry.metadata);
    });
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
