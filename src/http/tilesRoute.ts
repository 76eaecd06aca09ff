/**
 * The logs as c2sp.org/tlog-tiles, for standard clients (Tessera's client and fsck, witnesses'
 * monitors): the caller's organization's log under `/v1/ledger/log/` (its API key as bearer decides
 * which), and the installation log under `/v1/ledger/installation/` (public, or behind
 * LEDGER_INSTALLATION_TOKEN as a bearer token). Plain Koa: the resources are bytes, not JSON.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { bearerToken } from '../domain/apiKey';
import { AppError } from '../domain/errors';
import { INSTALLATION } from '../domain/ledger/log';
import type { HttpServices } from '../services/container';
import type { AppState } from './appState';
import type { ExportAuthenticator } from './exportRoute';

export const LOG_PREFIX = '/v1/ledger/log/';
export const INSTALLATION_PREFIX = '/v1/ledger/installation/';

function sameToken(given: string | undefined, expected: string): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function tilesApi(services: HttpServices, authenticate: ExportAuthenticator, installationToken: string | undefined): Middleware<AppState> {
  return async (ctx, next) => {
    const prefix = ctx.path.startsWith(LOG_PREFIX) ? LOG_PREFIX : ctx.path.startsWith(INSTALLATION_PREFIX) ? INSTALLATION_PREFIX : null;
    if (!prefix || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
      await next();
      return;
    }
    let tenant: string;
    if (prefix === LOG_PREFIX) tenant = (await authenticate(ctx)).tenant;
    else {
      if (installationToken && !sameToken(bearerToken(ctx.get('authorization') || undefined), installationToken)) {
        throw new AppError('MISSING_AUTHORIZATION', 'The installation log needs its token: Authorization: Bearer <LEDGER_INSTALLATION_TOKEN>');
      }
      tenant = INSTALLATION;
    }
    const path = ctx.path.slice(prefix.length);
    const { body, immutable } = await services.api.ledgerReads.tileResource(tenant, path);
    ctx.status = 200;
    ctx.type = path === 'checkpoint' ? 'text/plain; charset=utf-8' : 'application/octet-stream';
    // Full tiles never change; a checkpoint and partial tiles are cached a few seconds at most.
    ctx.set('Cache-Control', immutable ? (prefix === LOG_PREFIX ? 'private, max-age=31536000, immutable' : 'public, max-age=31536000, immutable') : 'no-cache');
    ctx.body = body;
  };
}
