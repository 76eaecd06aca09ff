/** The baseline server for `npm run bench`: bare Koa answering a small JSON body, nothing else. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  ctx.body = { ok: true };
});
const handle = app.callback();
const server = createServer((req, res) => void handle(req, res)).listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
