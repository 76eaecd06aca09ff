/**
 * A stream's state as a person reads it: failing from the first refused delivery (not only after the
 * failing limit), with the error, when it happened and when the next attempt is due; "Retry now" makes
 * the deliverer try at once instead of waiting out a Retry-After of ten minutes; a recovered stream shows
 * no stale error; a successful test of a failing stream retries it, and that delivery decides.
 */
import type { Collection } from 'mongodb';
import { call, eventBody, eventually } from '../helpers/api';
import { startTestApp, type TestApp, type TestOrg } from '../helpers/harness';
import { type Receiver, webhookItems, webhookReceiver } from '../helpers/streamReceivers';
import { quietFor } from '../helpers/waiting';

let app: TestApp;
beforeAll(async () => {
  // The defaults: a ten-minute failing limit, five minutes' longest backoff.
  app = await startTestApp({ label: 'streamretry' });
});
afterAll(() => app.close());

const TEN_MINUTES = { kind: 'status', status: 503, retryAfter: '600' } as const;

const view = async (org: TestOrg, id: string) => (await call(`${app.url}/v1/streams/${id}`, { key: org.key })).body;

/**
 * A stream whose receiver refuses with a Retry-After of ten minutes, with one event to deliver, once it
 * reads as failing (refused at least once, its next attempt due minutes away); `failing` is that view.
 */
async function failingStream(org: TestOrg): Promise<{ id: string; receiver: Receiver; failing: any }> {
  let secret = '';
  const receiver = await webhookReceiver(() => secret).start();
  receiver.mode = TEN_MINUTES;
  try {
    const res = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'siem', destination: { type: 'webhook', url: `${receiver.url}/hook` }, start_seq: 1 } });
    expect(res.status).toBe(201);
    secret = res.body.signing_secret;
    const id: string = res.body.id;
    expect((await call(`${app.url}/v1/events`, { key: org.key, body: eventBody() })).status).toBe(201);
    const failing = await eventually('the first refusal seen as failing', async () => {
      const v = await view(org, id);
      return receiver.refused.length > 0 && v.state === 'failing' && v.next_attempt_at !== null && Date.parse(v.next_attempt_at) - Date.now() > 60_000 && v;
    });
    return { id, receiver, failing };
  } catch (error) {
    await receiver.stop();
    throw error;
  }
}

test('failing from the first refused attempt, then "Retry now" delivers at once and clears the error', async () => {
  const org = await app.org();
  const { id, receiver, failing } = await failingStream(org);
  try {
    expect(failing.last_error).toMatch(/^HTTP 503/);
    expect(Date.parse(failing.last_error_at)).toBeGreaterThanOrEqual(Date.parse(failing.failing_since));
    expect(failing.delivered_seq).toBe(0);
    expect(failing.history.some((h: { failed: number }) => h.failed > 0)).toBe(true);

    receiver.mode = { kind: 'ok' };
    const retried = await call(`${app.url}/v1/streams/${id}/retry`, { key: org.key, body: {} });
    expect(retried.status).toBe(200);
    expect(retried.body.id).toBe(id);
    const active = await eventually('delivered after "Retry now"', async () => {
      const v = await view(org, id);
      return v.state === 'active' && v.lag_events === 0 && v;
    });
    // Long before the ten minutes the receiver asked for.
    expect(webhookItems(receiver).length).toBe(active.delivered_seq);
    expect(active).toMatchObject({ last_error: null, last_error_at: null, failing_since: null, next_attempt_at: null });
  } finally {
    await receiver.stop();
  }
});

test('a successful test of a failing stream retries it; a refused test changes nothing', async () => {
  const org = await app.org();
  const { id, receiver } = await failingStream(org);
  try {
    const refusedTest = await call(`${app.url}/v1/streams/${id}/test`, { key: org.key, body: {} });
    expect(refusedTest.body).toMatchObject({ ok: false, status: 503, retrying: false });
    expect((await view(org, id)).state).toBe('failing');

    receiver.mode = { kind: 'ok' };
    const test = await call(`${app.url}/v1/streams/${id}/test`, { key: org.key, body: {} });
    expect(test.body).toEqual({ ok: true, status: 200, error: null, retrying: true });
    await eventually('active after the test', async () => {
      const v = await view(org, id);
      return v.state === 'active' && v.lag_events === 0 && v;
    });
    // The test item and the events: the test item first.
    expect(webhookItems(receiver).some((item: { test?: boolean }) => item.test === true)).toBe(true);
    const again = await call(`${app.url}/v1/streams/${id}/test`, { key: org.key, body: {} });
    expect(again.body).toEqual({ ok: true, status: 200, error: null, retrying: false });
  } finally {
    await receiver.stop();
  }
});

test('"Retry now" on a paused stream leaves it paused; an unknown or another organization\'s stream is 404', async () => {
  const org = await app.org();
  const { id, receiver } = await failingStream(org);
  try {
    expect((await call(`${app.url}/v1/streams/${id}/pause`, { key: org.key, body: {} })).body.state).toBe('paused');
    receiver.mode = { kind: 'ok' };
    const retried = await call(`${app.url}/v1/streams/${id}/retry`, { key: org.key, body: {} });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ state: 'paused', next_attempt_at: null });
    // Given the time to scan twice, nothing is delivered while paused.
    await quietFor(600, 'three scan intervals (200 ms here) in which a paused stream must deliver nothing');
    expect(webhookItems(receiver)).toEqual([]);
    const other = await app.org();
    expect((await call(`${app.url}/v1/streams/${id}/retry`, { key: other.key, body: {} })).status).toBe(404);
    expect((await call(`${app.url}/v1/streams/nope/retry`, { key: org.key, body: {} })).status).toBe(404);
    // Resumed, it starts with its backoff over (a new run), and delivers.
    await call(`${app.url}/v1/streams/${id}/resume`, { key: org.key, body: {} });
    await eventually('delivered after resume', async () => (await view(org, id)).state === 'active' && webhookItems(receiver).length > 0);
  } finally {
    await receiver.stop();
  }
});

test('stream rows changed behind the service\'s back: a retry time that is no time, or far in the future, neither stops delivery nor silences "Retry now"; bad progress times read as none', async () => {
  const org = await app.org();
  const { id, receiver } = await failingStream(org);
  const streams = app.collections.streams as unknown as Collection<{ _id: string }>;
  const progress = app.collections.streamProgress as unknown as Collection<{ _id: string }>;
  try {
    // Not a time: before the fix the next scan threw, the process died, and it could not start again.
    await streams.updateOne({ _id: id }, { $set: { retry_requested_at: 'not a date' } });
    await app.services.streamDelivery.scan();
    await streams.updateOne({ _id: id }, { $set: { retry_requested_at: new Date('9999-01-01T00:00:00Z') } });
    await app.services.streamDelivery.scan();
    // Progress times that are not times: the list still answers, with none.
    await progress.updateOne({ _id: id }, { $set: { last_error_at: 'yesterday', next_attempt_at: { a: 1 } } });
    const listed = await call(`${app.url}/v1/streams`, { key: org.key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.find((s: { id: string }) => s.id === id)).toMatchObject({ state: 'failing', last_error_at: null, next_attempt_at: null });

    // The far-future stamp did not become the newest request answered: "Retry now" still ends the wait.
    receiver.mode = { kind: 'ok' };
    expect((await call(`${app.url}/v1/streams/${id}/retry`, { key: org.key, body: {} })).status).toBe(200);
    await eventually('delivered after "Retry now"', async () => (await view(org, id)).state === 'active' && webhookItems(receiver).length > 0);
  } finally {
    await receiver.stop();
  }
});
