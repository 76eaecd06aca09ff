/**
 * One lifecycle for everything that runs in the background: each job is declared once (its name, what it
 * runs and how often), started by one call in the order declared and stopped by one call in the reverse
 * order, so that what a job relies on (the writer, the ledger's rounds) is still running while it stops.
 * A job that does not apply to an instance is not declared there.
 */
import type { Logger } from 'pino';

export interface Job {
  readonly name: string;
  /** Starts the job; it may run its first pass now. A job that cannot start throws (its port is taken). */
  start(): void | Promise<void>;
  /** Stops it: no new pass begins, and the one in flight ends before this resolves. */
  stop(): Promise<void>;
}

/**
 * A job that runs `run` every `intervalMs`, one pass at a time: a pass still running when the next is due
 * is not doubled. A failed pass is logged; the next one is tried on time.
 */
export class Periodic implements Job {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown>,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => { this.pass(); }, this.intervalMs);
    // The process ends when its servers close, whatever a job's timer says.
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private pass(): void {
    this.running ??= this.run()
      .then(() => undefined, (error: unknown) => { this.log.error({ job: this.name, error: String(error) }, 'a background job\'s pass failed; the next runs on time'); })
      .finally(() => { this.running = null; });
  }
}

/** A job made of two calls: e.g. joining the instance list and leaving it, or closing a resource at the end. */
export function job(name: string, start: () => void | Promise<void>, stop: () => void | Promise<void>): Job {
  return { name, start, stop: async () => { await stop(); } };
}

export class Lifecycle {
  private started: Job[] = [];
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly jobs: readonly Job[],
    private readonly log: Logger,
  ) {
    const names = jobs.map((j) => j.name);
    const twice = names.filter((name, i) => names.indexOf(name) !== i);
    if (twice.length) throw new Error(`background jobs declared twice: ${twice.join(', ')}`);
  }

  /** The declared job of that name (tests stop and start one alone). */
  get(name: string): Job {
    const found = this.jobs.find((j) => j.name === name);
    if (!found) throw new Error(`no background job named ${name} on this instance (declared: ${this.jobs.map((j) => j.name).join(', ')})`);
    return found;
  }

  /** Starts every job in order; if one fails to start, stops those already started and rethrows. */
  async start(): Promise<void> {
    for (const each of this.jobs) {
      try {
        await each.start();
      } catch (error) {
        await this.stop();
        throw error;
      }
      this.started.push(each);
    }
  }

  /**
   * Stops the started jobs, last started first; one that fails to stop is logged and the others still
   * stop. A second call (a second signal) waits for the first rather than return before it is done.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll().finally(() => { this.stopping = null; });
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    const started = this.started.reverse();
    this.started = [];
    for (const each of started) {
      try {
        await each.stop();
      } catch (error) {
        this.log.error({ job: each.name, error: String(error) }, 'a background job did not stop cleanly');
      }
    }
  }
}
