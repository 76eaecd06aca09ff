/**
 * Request bodies for /v1: JSON objects only, at most `limit` bytes (1 MiB; a batch's is BATCH_MAX_BYTES). Each refusal is told by where it
 * happens, not by a library's message text: the content type (415), the size (413, from raw-body), the
 * JSON syntax (400 MALFORMED_JSON), keys that poison JavaScript consumers (`__proto__`,
 * `constructor.prototype`: 400, found by @hapi/bourne's scan, as co-body's own JSON parser would), and
 * anything that is not an object (400).
 */
import type { IncomingMessage } from 'node:http';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import Bourne from '@hapi/bourne';
import coBody from 'co-body';
import type { ParameterizedContext } from 'koa';
import { AppError } from '../domain/errors';
import type { AppState } from './appState';

const LARGE_BODY_CHARS = 1024 * 1024;

/** The large bodies waiting to be parsed, one after another. */
let largeParses: Promise<void> = Promise.resolve();

/**
 * Parsing megabytes holds the event loop for a while (2.5 million items: about 300 ms). Large bodies are
 * parsed one at a time, each after the event loop has had a turn, so that what is waiting (a health
 * check, other requests) goes between them: several at once do not add up to one long stall.
 */
async function parseInTurn(text: string): Promise<unknown> {
  const turn = largeParses.then(() => yieldToLoop());
  let release: () => void = () => undefined;
  largeParses = turn.then(() => new Promise<void>((resolve) => { release = resolve; }));
  await turn;
  try {
    return JSON.parse(text);
  } finally {
    release();
  }
}

/** 1 MiB, 5 MiB, 1500 bytes. */
function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** Whether the body is compressed: a Content-Encoding other than identity (co-body inflates gzip, deflate and br). */
export function isCompressed(ctx: Pick<ParameterizedContext<AppState>, 'req'>): boolean {
  const encoding = ctx.req.headers['content-encoding'] ?? '';
  return encoding !== '' && encoding.toLowerCase() !== 'identity';
}

/**
 * Content codings are case-insensitive and `x-gzip` is gzip (RFC 9110 §8.4.1, §18.6), but co-body's
 * `inflation` matches the header exactly (`GZIP` would be a 415): it is given the coding as it means it.
 */
function normalizeContentEncoding(req: IncomingMessage): void {
  const given = req.headers['content-encoding'];
  if (given === undefined) return;
  const coding = given.toLowerCase();
  req.headers['content-encoding'] = coding === 'x-gzip' ? 'gzip' : coding;
}

/**
 * The body as text. A client that goes away in the middle of a compressed body ends the read as it ends
 * a plain one's (raw-body's 400 "request aborted"): the pipe into zlib does not pass the abort on, and
 * the read would wait for ever, with no answer logged.
 */
async function readText(ctx: ParameterizedContext<AppState>, limit: number): Promise<string> {
  // Typed `any` by @types/co-body; with an encoding it is always a string.
  const read = coBody.text(ctx.req, { limit, encoding: 'utf8' }) as Promise<string>;
  if (!isCompressed(ctx)) return read;
  const req = ctx.req;
  let onClose: () => void = () => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onClose = () => {
      if (!req.complete) reject(Object.assign(new Error('request aborted'), { status: 400, type: 'request.aborted' }));
    };
    req.once('close', onClose);
    if (req.destroyed) onClose(); // gone before the read began: no 'close' is left to come
  });
  try {
    return await Promise.race([read, aborted]);
  } finally {
    req.off('close', onClose);
  }
}

/**
 * The body, when all of it has arrived: every byte its Content-Length gives is in the request's buffer,
 * none read yet, not compressed and within `limit` (the parser pushes no more than that length of body:
 * what follows is the next request's). It is taken at once, decoded as co-body would give it: UTF-8, a
 * leading byte order mark dropped (raw-body's decoder does), bad sequences as U+FFFD. Read through
 * raw-body (five listeners added and taken off, a promise, a decoder) it was ~2% of the CPU of an event.
 * Null otherwise (still arriving, compressed, too large, of unknown length, read already): co-body reads
 * it then, with its errors.
 */
export function bodyAtHand(req: IncomingMessage, limit: number): string | null {
  const length = req.headers['content-length'];
  if (req.readableDidRead || req.readableEncoding !== null || length === undefined || !/^[0-9]+$/.test(length) || isCompressed({ req })) return null;
  const bytes = Number(length);
  if (bytes > limit || req.readableLength !== bytes) return null;
  if (bytes === 0) return '';
  const text = (req.read() as Buffer).toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * `ctx.is('application/json')`, answered at once for the header every client sends with a body whose
 * length it gives (`Content-Type: application/json`, a Content-Length of digits): type-is would parse the
 * header and match it, which was 1% of the CPU of an event. Anything else is type-is's to judge.
 */
function isJson(ctx: ParameterizedContext<AppState>): boolean {
  const { headers } = ctx.req;
  if (headers['content-type'] === 'application/json' && /^[0-9]+$/.test(headers['content-length'] ?? '')) return true;
  return Boolean(ctx.is('application/json'));
}

/**
 * Media types are case-insensitive (RFC 9110 §8.3.1), and type-is matches them so, but the REST adapter
 * that the body goes on to looks for `application/json` exactly: `Application/JSON` would pass here and
 * get the adapter's own 415. The type is handed on as it is meant, its parameters as they were.
 */
function normalizeContentType(req: IncomingMessage): void {
  const given = req.headers['content-type'];
  if (given === undefined || given.startsWith('application/json')) return;
  req.headers['content-type'] = given.replace(/^[^;]*/, (type) => type.trim().toLowerCase());
}

export async function readJsonObject(ctx: ParameterizedContext<AppState>, limit: number): Promise<Record<string, unknown>> {
  if (!isJson(ctx)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  normalizeContentType(ctx.req);
  normalizeContentEncoding(ctx.req);
  let text: string;
  try {
    // The middleware runs within the parser's 'request' event, before the parser has pushed the rest of
    // what came in the same read (a small request's body): that is in the request's buffer once the
    // microtasks queued meanwhile have run, not before.
    await Promise.resolve();
    text = bodyAtHand(ctx.req, limit) ?? (await readText(ctx, limit));
  } catch (error) {
    // The rest of a body that was not read to its end (too large; not what its Content-Encoding says) would
    // hold the connection: Node discards an unread body only when nothing has been piped from it.
    if (!ctx.req.complete) ctx.set('Connection', 'close');
    const status = error instanceof Error && 'status' in error ? error.status : undefined;
    if (status === 413) throw new AppError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${formatBytes(limit)} limit`);
    // co-body decompresses what Content-Encoding names (gzip, deflate, br) with zlib, whose errors carry
    // no HTTP status: bytes that are not what the header says are the client's mistake, not ours.
    if (status === undefined && isCompressed(ctx)) {
      throw new AppError('MALFORMED_JSON', `Request body could not be decompressed as its Content-Encoding (${ctx.get('content-encoding')}) says: ${error instanceof Error ? error.message : String(error)}`);
    }
    throw error;
  }
  let value: unknown;
  try {
    value = text === '' ? undefined : text.length > LARGE_BODY_CHARS ? await parseInTurn(text) : JSON.parse(text);
  } catch (error) {
    throw new AppError('MALFORMED_JSON', `Request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  // The scan walks the value; only a text that mentions one of the keys can hold one.
  if (text.includes('__proto__') || text.includes('prototype')) {
    try {
      Bourne.scan(value, { protoAction: 'error' });
    } catch {
      throw new AppError('VALIDATION_FAILED', 'Request body must not contain "__proto__" or "constructor.prototype" keys');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new AppError('VALIDATION_FAILED', 'Request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
