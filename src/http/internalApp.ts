/**
 * The internal listener (INTERNAL_HOST, INTERNAL_PORT; loopback by default): what the instances of one
 * installation send each other, kept off the public port so that no client can even reach it.
 */
import type { RequestListener } from 'node:http';
import Koa from 'koa';
import type { Ingest } from '../ingest/ingest';
import { forwardRoute } from './forwardRoute';

export function createInternalListener(ingest: Ingest): RequestListener {
  const koa = new Koa();
  koa.silent = true;
  koa.use(forwardRoute(ingest));
  const handle = koa.callback();
  return (req, res) => void handle(req, res);
}
