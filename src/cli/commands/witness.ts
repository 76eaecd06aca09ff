/** `witness serve`: a c2sp.org/tlog-witness v1.0.0 witness, for a customer to run on their own machine. */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadOrCreateWitnessKey, parseWitnessConfig, Witness } from '../../witness/witness';
import { type Command, need, opt, str, UsageError } from '../command';

/** The largest add-checkpoint body read (a checkpoint, a few signatures and 63 proof lines fit many times). */
const MAX_BODY_BYTES = 64 * 1024;

export const witnessCommands: Command[] = [
  {
    words: 'witness serve',
    summary: 'run a tlog-witness v1.0.0 witness that cosigns a log\'s checkpoints once they extend the last it saw',
    synopsis: '--key FILE [--name NAME] --config FILE --state FILE [--listen HOST:PORT]',
    details:
      '--key: the witness\'s Ed25519 key (made with --name when the file does not exist; the verifier key is printed). ' +
      '--config: the logs it follows, one "log <origin> <verifier key>" per line. --state: the newest checkpoint cosigned per log, ' +
      'replaced atomically before each answer. --listen: default 127.0.0.1:7380. Submissions: POST http://HOST:PORT/add-checkpoint. Runs until SIGINT or SIGTERM.',
    options: { key: str, name: str, config: str, state: str, listen: str },
    async run(values) {
      const [host, port] = (opt(values, 'listen') ?? '127.0.0.1:7380').split(/:(?=\d+$)/) as [string, string | undefined];
      if (port === undefined) throw new UsageError('--listen is HOST:PORT');
      let witness: Witness;
      let vkey: string;
      try {
        const { cosigner } = loadOrCreateWitnessKey(need(values, 'key'), opt(values, 'name'));
        vkey = cosigner.text;
        witness = new Witness(cosigner, parseWitnessConfig(readFileSync(need(values, 'config'), 'utf8')), need(values, 'state'));
      } catch (error) {
        if (error instanceof UsageError) throw error;
        throw new UsageError(error instanceof Error ? error.message : String(error));
      }
      const server = createServer((req, res) => {
        if (req.url !== '/add-checkpoint') {
          res.writeHead(404).end();
          return;
        }
        if (req.method !== 'POST') {
          res.writeHead(405, { Allow: 'POST' }).end();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        req.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            res.writeHead(413, { Connection: 'close' }).end();
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        req.on('end', () => {
          if (res.headersSent) return;
          witness.addCheckpoint(Buffer.concat(chunks).toString('utf8')).then(
            (answer) => {
              res.writeHead(answer.status, { 'Content-Type': answer.contentType ?? 'text/plain; charset=utf-8' }).end(answer.body);
            },
            (error: unknown) => {
              // The state could not be saved: nothing was cosigned.
              process.stderr.write(`witness: ${error instanceof Error ? error.message : String(error)}\n`);
              res.writeHead(500).end();
            },
          );
        });
      });
      server.listen(Number(port), host);
      await once(server, 'listening');
      const address = server.address() as AddressInfo;
      process.stdout.write(`Witness verifier key (put it in the service's LEDGER_WITNESS_POLICY): ${vkey}\nListening on http://${address.address}:${address.port}/add-checkpoint\n`);
      await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
      await new Promise((resolve) => server.close(resolve));
      return { json: { verifier_key: vkey, cosigned: witness.cosigned }, text: 'Witness stopped' };
    },
  },
];
