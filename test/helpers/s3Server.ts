/**
 * A real S3-compatible server for the stream tests: Versity's S3 gateway (versitygw) with its POSIX
 * backend, built from the Go module proxy at the version tools/versitygw/go.mod pins. Each bucket is a
 * directory under `root`, each object a file at its key: what a stream wrote can be read back through
 * the S3 API and, as files, checked by `stream verify`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { goProgram } from './goPrograms';
import { TimedOut, eventually } from './waiting';

export interface S3Server {
  endpoint: string;
  root: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  client: S3Client;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startS3Server(buckets: string[]): Promise<S3Server> {
  // Built once per source tree of tools/versitygw (globalSetup; here only if that build failed).
  const binary = await goProgram('versitygw');
  const root = mkdtempSync(join(tmpdir(), 'versitygw-'));
  const port = await freePort();
  const accessKeyId = 'AUDITLEDGERTEST';
  const secretAccessKey = 'audit-ledger-test-secret-key';
  const child: ChildProcess = spawn(binary, ['--port', `127.0.0.1:${port}`, '--access', accessKeyId, '--secret', secretAccessKey, '--region', 'us-east-1', 'posix', root], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
  for (const bucket of buckets) {
    await eventually(`versitygw to create the bucket ${bucket}`, async () => {
      try {
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
        return true;
      } catch (error) {
        if (child.exitCode !== null) throw new Error(`versitygw exited: ${stderr}`, { cause: error });
        return false;
      }
    }, 20_000, 200).catch((error: unknown) => {
      throw error instanceof TimedOut ? new Error(`${error.message}: ${stderr}`, { cause: error }) : error;
    });
  }
  return {
    endpoint, root, accessKeyId, secretAccessKey, region: 'us-east-1', client,
    async stop() {
      client.destroy();
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
      rmSync(root, { recursive: true, force: true });
    },
  };
}
