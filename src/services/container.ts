/** Wires repositories and services for one database; the app, the CLI and the tests all start here. */
import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import type { Config } from '../config/env';
import { ApiKeyRepository } from '../db/apiKeyRepository';
import { collections, ensureIndexes, type Collections } from '../db/database';
import { OrgRepository } from '../db/orgRepository';
import type { Clock } from '../domain/time';
import { EventWriter } from '../ingest/eventWriter';
import { ApiKeyAuthenticator } from './auth';
import { EventService } from './events';

export interface Services {
  db: Db;
  collections: Collections;
  orgs: OrgRepository;
  apiKeys: ApiKeyRepository;
  auth: ApiKeyAuthenticator;
  writer: EventWriter;
  events: EventService;
  clock: Clock;
  log: Logger;
}

export async function createServices(db: Db, config: Pick<Config, 'planCaps'>, clock: Clock, log: Logger): Promise<Services> {
  const c = collections(db);
  await ensureIndexes(c);
  const orgs = new OrgRepository(c, config.planCaps);
  const apiKeys = new ApiKeyRepository(c);
  const auth = new ApiKeyAuthenticator(apiKeys, clock, log);
  const writer = new EventWriter(c, orgs, apiKeys, clock, log, (hash) => auth.forget(hash));
  return {
    db,
    collections: c,
    orgs,
    apiKeys,
    auth,
    writer,
    events: new EventService(c, writer, clock),
    clock,
    log,
  };
}
