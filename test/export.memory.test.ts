/**
 * An export of 100,000 events streams: the server's memory stays flat while the body is many times
 * larger than the memory it is allowed to grow by. The server runs in this process, so its heap is
 * this process's heap; the client only counts bytes.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startTestApp, type TestApp, type TestOrg } from './helpers/harness';
import { seedEvents } from './helpers/seed';

const EVENTS = 100_000;
const MiB = 1024 * 1024;
// Live heap growth allowed during an export. Streaming needs a few MiB (one cursor batch and stream
// buffers); a buffered export would hold all 100,000 documents, well over 100 MiB. Both bodies are
// larger than this limit, the JSON one several times.
const HEAP_GROWTH_LIMIT = 12 * MiB;

// Live memory is what must stay flat, so samples are taken after a full collection: without it the
// figure would mostly say how lazily V8 collects garbage.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

let app: TestApp;
let org: TestOrg;

beforeAll(async () => {
  app = await startTestApp({ label: 'memory' });
  org = await app.org();
  await seedEvents(app, org, EVENTS);
}, 300_000);
afterAll(() => app.close());

async function measureExport(format: 'json' | 'csv'): Promise<{ bytes: number; lines: number; heapGrowth: number; rssGrowth: number }> {
  collectGarbage();
  const baseline = process.memoryUsage();
  let peakHeap = baseline.heapUsed;
  let peakRss = baseline.rss;
  const sampler = setInterval(() => {
    collectGarbage();
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed);
    peakRss = Math.max(peakRss, m.rss);
  }, 250);
  let bytes = 0;
  let lines = 0;
  let objects = 0;
  try {
    const res = await fetch(`${app.url}/v1/events/export?format=${format}`, { headers: { authorization: `Bearer ${org.key}` } });
    expect(res.status).toBe(200);
    if (!res.body) throw new Error('the export answered without a body');
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      for (const byte of value) {
        if (byte === 10) lines++;
        if (byte === 123) objects++; // '{' opens each event (and its metadata)
      }
    }
  } finally {
    clearInterval(sampler);
  }
  return { bytes, lines: format === 'csv' ? lines : objects, heapGrowth: peakHeap - baseline.heapUsed, rssGrowth: peakRss - baseline.rss };
}

test.each(['json', 'csv'] as const)('%s export of 100,000 events keeps the heap flat', async (format) => {
  const result = await measureExport(format);
  // Printed so the figures are visible in CI output and can be compared across runs.
  console.log(
    `${format}: ${(result.bytes / MiB).toFixed(1)} MiB streamed; peak heap growth ${(result.heapGrowth / MiB).toFixed(1)} MiB, peak RSS growth ${(result.rssGrowth / MiB).toFixed(1)} MiB`,
  );
  if (format === 'json') expect(result.lines).toBe(EVENTS * 2); // one '{' for the event, one for its metadata
  else expect(result.lines).toBe(EVENTS); // header + rows, CRLF between them
  expect(result.bytes).toBeGreaterThan(HEAP_GROWTH_LIMIT);
  expect(result.heapGrowth).toBeLessThan(HEAP_GROWTH_LIMIT);
});
