/**
 * Without STREAM_ALLOW_PRIVATE_DESTINATIONS (the default), a stream cannot point into the installation's
 * own network: loopback, private, link-local and metadata addresses, `localhost` names and plain http
 * are refused when the stream is created (400, naming the field), and the request guard refuses them
 * again when sending, whatever the name resolves to.
 */
import { call } from '../helpers/api';
import { startTestApp, type TestApp } from '../helpers/harness';
import { OutboundHttp } from '../../src/streams/outboundHttp';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ label: 'stream_guard', env: { STREAM_ALLOW_PRIVATE_DESTINATIONS: 'false' } });
});
afterAll(() => app.close());

test('destinations inside the installation\'s network are refused at creation', async () => {
  const org = await app.org();
  for (const url of ['https://127.0.0.1/hook', 'https://[::1]/hook', 'https://10.0.0.5/', 'https://169.254.169.254/latest/meta-data', 'https://localhost:3000/', 'https://api.localhost/', 'http://example.com/hook', 'https://[::ffff:127.0.0.1]/']) {
    const res = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'x', destination: { type: 'webhook', url } } });
    expect({ url, status: res.status, fields: res.body.fields }).toEqual({ url, status: 400, fields: ['destination.url'] });
  }
  const s3 = await call(`${app.url}/v1/streams`, { key: org.key, body: { name: 'x', destination: { type: 's3', endpoint: 'http://127.0.0.1:9000', region: 'r', bucket: 'bkt', access_key_id: 'a', secret_access_key: 's' } } });
  expect(s3.body.fields).toEqual(['destination.endpoint']);
  expect((await call(`${app.url}/v1/streams`, { key: org.key })).body.data).toEqual([]);
});

test('the request guard refuses a private address when sending, too', async () => {
  const http = new OutboundHttp({ allowPrivate: false, timeoutMs: 2000, maxSockets: 4 });
  try {
    await expect(http.request('POST', 'https://127.0.0.1:9/', {}, Buffer.from('[]'))).rejects.toThrow(/loopback, private or link-local/);
    // A name the resolver turns into a loopback address (the trailing dot passes the name check).
    await expect(http.request('POST', 'https://localhost.:9/', {}, Buffer.from('[]'))).rejects.toThrow(/loopback, private or link-local|ENOTFOUND|EAI_AGAIN/);
  } finally {
    http.close();
  }
});
