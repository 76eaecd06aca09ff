/**
 * What a call can fail with. `AuditLedgerError` carries the API's error body as is (docs/api.md, "Error
 * body": `message`, `code`, `fields`) with the status and, on 429 and 503, `Retry-After`.
 */

export interface ErrorBody {
  message: string;
  code: string;
  fields?: string[];
}

/** The service answered with an error status. */
export class AuditLedgerError extends Error {
  override readonly name = 'AuditLedgerError';
  readonly status: number;
  /** The API's code (`MISSING_REQUIRED_FIELDS`, `RATE_LIMITED`, …); `HTTP_<status>` when the body had none. */
  readonly code: string;
  /** The fields a validation error names (`events[3].actor.id`). */
  readonly fields: string[];
  /** Milliseconds the service asked to wait (`Retry-After`), or null. */
  readonly retryAfterMs: number | null;

  constructor(status: number, body: Partial<ErrorBody> | null, retryAfterMs: number | null) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? `HTTP_${status}`;
    this.fields = body?.fields ?? [];
    this.retryAfterMs = retryAfterMs;
  }

  /**
   * Whether sending the same request again may succeed: a rate limit, an unavailable service or
   * database, any 5xx. Not the monthly cap (it lasts until the month ends or the plan changes: the
   * application has to know) nor anything about the request itself.
   */
  get retryable(): boolean {
    if (this.status === 429) return this.code !== 'MONTHLY_LIMIT_REACHED';
    return this.status >= 500;
  }
}

/** The service could not be reached, or the connection failed before an answer (the request may have been stored). */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
}

/** `record()` while as many events wait for room as the queue holds: refused at once, not dropped. */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
}

/** `record()` after `close()`. */
export class QueueClosedError extends Error {
  override readonly name = 'QueueClosedError';
}
