/**
 * Log streams: under /v1 with an API key (and over tRPC), and for the dashboard with a session. Both
 * call the same service with the same schemas; only the way in differs.
 */
import { z } from 'zod';
import { ZCreatedStream, ZCreateStreamInput, ZStream, ZStreamIdInput, ZStreamList, ZStreamTestResult } from '../../domain/stream';
import { apiKeyProcedure, sessionProcedure } from '../init';

const AUTH = { 401: 'Missing or invalid API key' };
const ONE = { ...AUTH, 400: 'Invalid stream id', 404: 'Stream not found' };
const ZDeleted = z.object({ deleted: z.literal(true) });

export const createStream = apiKeyProcedure
  .meta({
    scope: 'events:read',
    openapi: {
      method: 'POST', path: '/streams', tags: ['streams'], summary: 'Create a log stream',
      description: 'Delivers the organization\'s events, in sequence order, with their ledger receipts, to a webhook, S3-compatible storage, Splunk HEC or Datadog Logs. Secrets are write-only; a webhook\'s signing secret is in this answer only.',
      errorResponses: { ...AUTH, 400: 'Invalid destination, format or start', 409: 'STREAM_LIMIT_REACHED: the organization has the most streams it may have', 413: 'Body over 1 MiB', 415: 'Content-Type is not application/json' },
    },
    successStatus: 201,
  })
  .input(ZCreateStreamInput)
  .output(ZCreatedStream)
  .mutation(({ ctx, input }) => ctx.services.streams.create(ctx.principal, input));

export const listStreams = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'GET', path: '/streams', tags: ['streams'], summary: 'The organization\'s log streams, with state and lag', errorResponses: AUTH } })
  .input(z.object({}))
  .output(ZStreamList)
  .query(({ ctx }) => ctx.services.streams.list(ctx.principal));

export const getStream = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'GET', path: '/streams/{id}', tags: ['streams'], summary: 'One log stream', errorResponses: ONE } })
  .input(ZStreamIdInput)
  .output(ZStream)
  .query(({ ctx, input }) => ctx.services.streams.get(ctx.principal, input.id));

export const pauseStream = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'POST', path: '/streams/{id}/pause', tags: ['streams'], summary: 'Pause a stream (it keeps its place)', errorResponses: ONE } })
  .input(ZStreamIdInput)
  .output(ZStream)
  .mutation(({ ctx, input }) => ctx.services.streams.setPaused(ctx.principal, input.id, true));

export const resumeStream = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'POST', path: '/streams/{id}/resume', tags: ['streams'], summary: 'Resume a paused stream from where it stopped', errorResponses: ONE } })
  .input(ZStreamIdInput)
  .output(ZStream)
  .mutation(({ ctx, input }) => ctx.services.streams.setPaused(ctx.principal, input.id, false));

export const testStream = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'POST', path: '/streams/{id}/test', tags: ['streams'], summary: 'Send one test item (not an event of the log) to the destination, and say what it answered', errorResponses: ONE } })
  .input(ZStreamIdInput)
  .output(ZStreamTestResult)
  .mutation(({ ctx, input }) => ctx.services.streams.test(ctx.principal, input.id));

export const retryStream = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'POST', path: '/streams/{id}/retry', tags: ['streams'], summary: 'Retry a failing stream now', description: 'The stream sends its next batch now instead of waiting out its backoff (within a scan interval when another instance delivers it); its state then follows that attempt. A paused stream stays paused.', errorResponses: ONE } })
  .input(ZStreamIdInput)
  .output(ZStream)
  .mutation(({ ctx, input }) => ctx.services.streams.retryNow(ctx.principal, input.id));

export const deleteStream = apiKeyProcedure
  .meta({ scope: 'events:read', openapi: { method: 'DELETE', path: '/streams/{id}', tags: ['streams'], summary: 'Delete a stream', errorResponses: ONE } })
  .input(ZStreamIdInput)
  .output(ZDeleted)
  .mutation(({ ctx, input }) => ctx.services.streams.remove(ctx.principal, input.id));

/** The dashboard's Streams page: the same, with the session's organization. */
const manageStreams = sessionProcedure.meta({ permission: 'streams:manage' });

export const sessionStreams = {
  list: manageStreams.output(ZStreamList).query(({ ctx }) => ctx.services.streams.list(ctx.principal)),
  create: manageStreams.input(ZCreateStreamInput).output(ZCreatedStream).mutation(({ ctx, input }) => ctx.services.streams.create(ctx.principal, input)),
  pause: manageStreams.input(ZStreamIdInput).output(ZStream).mutation(({ ctx, input }) => ctx.services.streams.setPaused(ctx.principal, input.id, true)),
  resume: manageStreams.input(ZStreamIdInput).output(ZStream).mutation(({ ctx, input }) => ctx.services.streams.setPaused(ctx.principal, input.id, false)),
  retry: manageStreams.input(ZStreamIdInput).output(ZStream).mutation(({ ctx, input }) => ctx.services.streams.retryNow(ctx.principal, input.id)),
  test: manageStreams.input(ZStreamIdInput).output(ZStreamTestResult).mutation(({ ctx, input }) => ctx.services.streams.test(ctx.principal, input.id)),
  remove: manageStreams.input(ZStreamIdInput).output(ZDeleted).mutation(({ ctx, input }) => ctx.services.streams.remove(ctx.principal, input.id)),
};
