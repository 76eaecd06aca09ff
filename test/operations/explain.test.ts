/**
 * On real MongoDB (mongodb-memory-server, or a MONGODB_URI that is MongoDB), every list page, point
 * read and export the service sends is explained, and its winning plan must be an index scan with no
 * in-memory sort. The commands are the ones the driver really sent while the API was called (command
 * monitoring), so the test follows the code. On FerretDB, which answers explain with PostgreSQL's plan
 * and uses no index for reads, the suite is skipped and says so; the walker itself is tested on plans
 * of the shapes MongoDB returns.
 */
import type { CommandStartedEvent } from 'mongodb';
import { createEvent } from '../helpers/api';
import { planProblem, planStages } from '../helpers/explainPlan';
import { startTestApp, type TestApp } from '../helpers/harness';

describe('the plan walker', () => {
  const ixscan = { stage: 'IXSCAN', indexName: 'tenant_ts_id' };
  test('an index scan under FETCH and LIMIT is fine', () => {
    const explain = { queryPlanner: { winningPlan: { stage: 'LIMIT', inputStage: { stage: 'FETCH', inputStage: ixscan } } } };
    expect(planStages(explain)).toEqual(['LIMIT', 'FETCH', 'IXSCAN']);
    expect(planProblem(planStages(explain))).toBeNull();
  });
  test('a slot-based (MongoDB 7) plan is read under queryPlan', () => {
    const explain = { queryPlanner: { winningPlan: { queryPlan: { stage: 'FETCH', inputStage: ixscan }, slotBasedPlan: {} } } };
    expect(planProblem(planStages(explain))).toBeNull();
  });
  test('an in-memory sort, a collection scan or no plan is named', () => {
    expect(planProblem(planStages({ queryPlanner: { winningPlan: { stage: 'SORT', inputStage: { stage: 'FETCH', inputStage: ixscan } } } }))).toMatch(/in-memory sort/);
    expect(planProblem(planStages({ queryPlanner: { winningPlan: { stage: 'COLLSCAN' } } }))).toMatch(/collection scan/);
    expect(planProblem(planStages({ queryPlanner: { winningPlan: { stage: 'OR', inputStages: [ixscan, { stage: 'COLLSCAN' }] } } }))).toMatch(/collection scan/);
    expect(planProblem(planStages({ explainVersion: '1' }))).toMatch(/no winning plan/);
  });
});

// FerretDB answers explain with PostgreSQL's plan, and its reads use no index: skipped there (reported).
const onMongoDb = process.env.TEST_DATABASE_KIND === 'mongodb';
(onMongoDb ? describe : describe.skip)('on MongoDB, every read the API sends is an index scan without an in-memory sort', () => {
  let app: TestApp;
  const sent: CommandStartedEvent[] = [];
  beforeAll(async () => {
    app = await startTestApp({ label: 'explain' });
    app.client.on('commandStarted', (event) => {
      if (event.commandName === 'find' && event.command.find === 'events') sent.push(event);
    });
  });
  afterAll(() => app.close());

  test('list pages (each filter, and the next page), point reads and exports', async () => {
    const org = await app.org({ monthlyCap: 1000 });
    const created = [];
    for (let i = 0; i < 30; i++) created.push(await createEvent(app.url, org.key, { actor: { id: `user_${i % 3}` }, action: `a.${i % 2}` }));
    const auth = { authorization: `Bearer ${org.key}` };
    const paths = [
      `/v1/events/${created[0].id}`,
      '/v1/events?limit=5',
      '/v1/events?limit=5&actor_id=user_1',
      '/v1/events?limit=5&action=a.1',
      '/v1/events?limit=5&resource_type=invoice&resource_id=inv_1',
      `/v1/events?limit=5&organization_id=${org.id}`,
      '/v1/events?limit=5&start_date=2000-01-01T00:00:00.000Z',
      '/v1/events/export?format=json',
      '/v1/events/export?format=csv&actor_id=user_2',
    ];
    sent.length = 0;
    for (const path of paths) {
      const res = await fetch(`${app.url}${path}`, { headers: auth });
      await res.arrayBuffer();
      expect(res.status).toBe(200);
    }
    // The second page: a keyset query.
    const first = (await (await fetch(`${app.url}/v1/events?limit=5`, { headers: auth })).json()) as { next_cursor: string };
    await (await fetch(`${app.url}/v1/events?limit=5&cursor=${encodeURIComponent(first.next_cursor)}`, { headers: auth })).arrayBuffer();
    expect(sent.length).toBeGreaterThanOrEqual(paths.length);

    const problems: string[] = [];
    for (const event of sent) {
      const { find, filter, sort, limit, projection } = event.command;
      const explain = await app.client.db(app.dbName).command({ explain: { find, filter, sort, limit, projection }, verbosity: 'queryPlanner' });
      const problem = planProblem(planStages(explain));
      if (problem) problems.push(`${JSON.stringify(filter)} sort ${JSON.stringify(sort instanceof Map ? Object.fromEntries(sort) : sort)}: ${problem}`);
    }
    expect(problems).toEqual([]);
  });
});
