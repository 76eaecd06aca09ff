/**
 * The one error type of the service. Domain and service code throw `AppError(code, message)`;
 * `trpc/errors.ts` turns anything thrown into one, and its status comes from the table below, so a
 * code's HTTP status is decided in exactly one place.
 */
import { z } from 'zod';
import type { Role } from './roles';

export const ERROR_CODES = {
  MISSING_REQUIRED_FIELDS: { status: 400, trpc: 'BAD_REQUEST' },
  VALIDATION_FAILED: { status: 400, trpc: 'BAD_REQUEST' },
  MALFORMED_JSON: { status: 400, trpc: 'PARSE_ERROR' },
  INVALID_CURSOR: { status: 400, trpc: 'BAD_REQUEST' },
  EVENT_SIGNATURE_INVALID: { status: 400, trpc: 'BAD_REQUEST' },
  MISSING_AUTHORIZATION: { status: 401, trpc: 'UNAUTHORIZED' },
  INVALID_API_KEY: { status: 401, trpc: 'UNAUTHORIZED' },
  NOT_SIGNED_IN: { status: 401, trpc: 'UNAUTHORIZED' },
  INVALID_CREDENTIALS: { status: 401, trpc: 'UNAUTHORIZED' },
  CROSS_SITE_REQUEST: { status: 403, trpc: 'FORBIDDEN' },
  INSUFFICIENT_SCOPE: { status: 403, trpc: 'FORBIDDEN' },
  INSUFFICIENT_ROLE: { status: 403, trpc: 'FORBIDDEN' },
  NO_ORGANIZATION: { status: 403, trpc: 'FORBIDDEN' },
  INVITATION_FOR_OTHER_EMAIL: { status: 403, trpc: 'FORBIDDEN' },
  INVALID_VIEWER_TOKEN: { status: 401, trpc: 'UNAUTHORIZED' },
  OUTSIDE_VIEWER_SCOPE: { status: 403, trpc: 'FORBIDDEN' },
  MEMBER_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  INVITATION_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  INVITATION_EXPIRED: { status: 404, trpc: 'NOT_FOUND' },
  INVITATION_USED: { status: 409, trpc: 'CONFLICT' },
  ALREADY_MEMBER: { status: 409, trpc: 'CONFLICT' },
  LAST_OWNER: { status: 409, trpc: 'CONFLICT' },
  LEGAL_HOLD: { status: 409, trpc: 'CONFLICT' },
  RETENTION_BUSY: { status: 409, trpc: 'CONFLICT' },
  HOLD_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  API_KEY_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  EVENT_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  CHECKPOINT_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  STREAM_NOT_FOUND: { status: 404, trpc: 'NOT_FOUND' },
  STREAM_LIMIT_REACHED: { status: 409, trpc: 'CONFLICT' },
  PRODUCER_KEY_CONFLICT: { status: 409, trpc: 'CONFLICT' },
  METHOD_NOT_ALLOWED: { status: 405, trpc: 'METHOD_NOT_SUPPORTED' },
  EVENT_REFUSED: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, trpc: 'UNPROCESSABLE_CONTENT' },
  IDEMPOTENCY_KEY_UNVERIFIABLE: { status: 409, trpc: 'CONFLICT' },
  PAYLOAD_TOO_LARGE: { status: 413, trpc: 'PAYLOAD_TOO_LARGE' },
  EMAIL_TAKEN: { status: 409, trpc: 'CONFLICT' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, trpc: 'UNSUPPORTED_MEDIA_TYPE' },
  MONTHLY_LIMIT_REACHED: { status: 429, trpc: 'TOO_MANY_REQUESTS' },
  TOO_MANY_ATTEMPTS: { status: 429, trpc: 'TOO_MANY_REQUESTS' },
  RATE_LIMITED: { status: 429, trpc: 'TOO_MANY_REQUESTS' },
  TOO_MANY_EXPORTS: { status: 429, trpc: 'TOO_MANY_REQUESTS' },
  INTERNAL_ERROR: { status: 500, trpc: 'INTERNAL_SERVER_ERROR' },
  SERVICE_UNAVAILABLE: { status: 503, trpc: 'SERVICE_UNAVAILABLE' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Codes only the dashboard's procedures and routes give; /v1 never answers with them (openapi.json leaves them out). */
export const DASHBOARD_ONLY_CODES: readonly ErrorCode[] = [
  'NOT_SIGNED_IN',
  'INVALID_CREDENTIALS',
  'CROSS_SITE_REQUEST',
  'API_KEY_NOT_FOUND',
  'EMAIL_TAKEN',
  'TOO_MANY_ATTEMPTS',
  'INSUFFICIENT_ROLE',
  'NO_ORGANIZATION',
  'INVITATION_FOR_OTHER_EMAIL',
  'INVALID_VIEWER_TOKEN',
  'OUTSIDE_VIEWER_SCOPE',
  'MEMBER_NOT_FOUND',
  'INVITATION_NOT_FOUND',
  'INVITATION_EXPIRED',
  'INVITATION_USED',
  'ALREADY_MEMBER',
  'LAST_OWNER',
];

/** The spec's fixed texts (interface.md §7); clients match on them, so they live in one place. */
export const MESSAGES = {
  missingRequiredFields: 'Missing required fields',
  missingAuthorizationHeader: 'Missing or invalid authorization header',
  invalidApiKey: 'Invalid API key',
  missingOrInvalidApiKey: 'Missing or invalid API key',
  eventNotFound: 'Event not found',
  monthlyLimitReached: 'Monthly event limit reached',
  internal: 'Internal server error',
  eventRefused: 'The event store refused this event, so it was not stored',
  writeUnconfirmed: 'The event store did not confirm the write; retry later',
  idempotencyKeyReused: 'This Idempotency-Key was already used for a different request',
  idempotencyKeyUnverifiable: 'This Idempotency-Key\'s request cannot be completed: some of its events may have been removed under retention by a version that did not keep their ids; send it with a new Idempotency-Key to store it again',
} as const;

/** The dashboard's texts. Sign-in failures say the same thing whatever was wrong, so they reveal no emails. */
export const ACCOUNT_MESSAGES = {
  notSignedIn: 'Not signed in',
  invalidCredentials: 'Invalid email or password',
  tooManyAttempts: 'Too many sign-in attempts. Wait a few minutes and try again.',
  tooManySignups: 'Too many sign-ups from this address. Wait a while and try again.',
  emailTaken: 'An account with this email already exists. Log in instead.',
  crossSite: 'Cross-site request refused',
  apiKeyNotFound: 'API key not found',
  noOrganization: 'This account is not a member of any organization. Ask an owner or admin for an invitation.',
  invitationNotFound: 'Invitation not found',
  invitationExpired: 'This invitation has expired; ask for a new one',
  invitationUsed: 'This invitation has already been used',
  invitationForOtherEmail: 'This invitation is for another email address',
  memberNotFound: 'Member not found',
  alreadyMember: 'This person is already a member of the organization',
  lastOwner: 'An organization must keep at least one owner',
} as const;

export interface ErrorDetails {
  /** Offending request fields, as dotted paths (`actor.id`). */
  fields?: string[];
  /** How many fields were offending when `fields` names only the first of them. */
  fieldsTotal?: number;
  /** Seconds after which a retry may succeed: sent as `Retry-After`. */
  retryAfter?: number;
  /** METHOD_NOT_ALLOWED only: the methods the resource has (`GET, POST`), sent as `Allow` (RFC 9110 says a 405 must). */
  allow?: string;
  /** NOT_SIGNED_IN only, on /trpc only: the session was ended by a membership change, and this is what its holder is told. */
  sessionEnded?: TSessionEnded;
}

/** Why a dashboard session ended, when a membership change ended it: `removed` by someone with the role `by_role`, or `left` (from another device). */
export interface TSessionEnded {
  reason: 'removed' | 'left';
  /** The organization's name (its id, should it be gone). */
  organization: string;
  by_role: Role;
}

export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  /** The `Retry-After` value in seconds, when waiting can help. */
  get retryAfter(): number | undefined {
    return this.details.retryAfter;
  }
}

/** The JSON body of every error response: `{ message, code }` plus the offending fields, never a stack. */
export const ZErrorBody = z
  .object({
    message: z.string().meta({ description: 'Human-readable; the spec\'s fixed texts, e.g. "Missing required fields"' }),
    code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
    fields: z.array(z.string()).optional().meta({ description: 'Offending request fields, as dotted paths (at most 20)' }),
    fields_total: z.number().int().optional().meta({ description: 'How many fields were offending, when `fields` names only the first 20' }),
  });
export type TErrorBody = z.infer<typeof ZErrorBody>;

/** Renders an AppError for a client. */
export function toErrorBody(error: AppError): TErrorBody {
  const body: TErrorBody = { message: error.message, code: error.code };
  if (error.details.fields?.length) body.fields = error.details.fields;
  if (error.details.fieldsTotal !== undefined) body.fields_total = error.details.fieldsTotal;
  return body;
}
