/** The application router: one definition for /trpc (TypeScript clients) and /v1 (REST, via trpc-to-openapi). */
import { accountRouter, dashboardRouter } from './dashboard/router';
import { createEvent } from './events/create';
import { createEventBatch } from './events/createBatch';
import { exportEvents } from './events/export';
import { getEvent } from './events/get';
import { listEvents } from './events/list';
import { bindProducerKey } from './events/producerKey';
import { router } from './init';
import { eventProof, ledgerCheckpoint, ledgerConsistency, ledgerKey } from './ledger/procedures';
import { mintViewerToken, viewerRouter } from './viewer/procedures';
import { createStream, deleteStream, getStream, listStreams, pauseStream, resumeStream, retryStream, testStream } from './streams/procedures';
import { eraseEvents, listHolds, placeHold, releaseHold, retentionPolicy, setRetentionPolicy } from './retention/procedures';

export const appRouter = router({
  events: router({
    create: createEvent,
    createBatch: createEventBatch,
    get: getEvent,
    list: listEvents,
    export: exportEvents,
    proof: eventProof,
    bindProducerKey,
  }),
  ledger: router({
    key: ledgerKey,
    checkpoint: ledgerCheckpoint,
    consistency: ledgerConsistency,
  }),
  streams: router({
    create: createStream,
    list: listStreams,
    get: getStream,
    pause: pauseStream,
    resume: resumeStream,
    test: testStream,
    retry: retryStream,
    delete: deleteStream,
  }),
  viewerTokens: router({ create: mintViewerToken }),
  retention: router({
    get: retentionPolicy,
    setPolicy: setRetentionPolicy,
    holds: router({ list: listHolds, place: placeHold, release: releaseHold }),
    erase: eraseEvents,
  }),
  account: accountRouter,
  dashboard: dashboardRouter,
  viewer: viewerRouter,
});

/** Imported (as a type only) by frontends and scripts: `createTRPCClient<AppRouter>(…)`. */
export type AppRouter = typeof appRouter;
