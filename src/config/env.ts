/** Configuration, read from the environment once and validated, so a bad value stops start-up with a clear message. */
import { z } from 'zod';

const capValue = z.coerce.number().int().min(0);

const ZEnv = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'must start with mongodb:// or mongodb+srv://')
    .optional(),
  MONGODB_DB: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, 'must be 1-63 letters, digits, _ or -').default('audit_ledger'),
  DATA_DIR: z.string().default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PLAN_CAP_FREE: capValue.default(10_000),
  PLAN_CAP_PRO: capValue.default(1_000_000),
  PLAN_CAP_ENTERPRISE: capValue.default(100_000_000),
  PUBLIC_URL: z.string().url().optional(),
  TRUST_PROXY: z.enum(['true', 'false']).default('false'),
});

export type Env = z.infer<typeof ZEnv>;

export const PLANS = ['free', 'pro', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

export interface Config {
  port: number;
  host: string;
  mongodbUri: string | undefined;
  mongodbDb: string;
  dataDir: string;
  logLevel: Env['LOG_LEVEL'];
  planCaps: Record<Plan, number>;
  publicUrl: string | undefined;
  trustProxy: boolean;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses configuration from an environment; throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = ZEnv.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    mongodbUri: e.MONGODB_URI,
    mongodbDb: e.MONGODB_DB,
    dataDir: e.DATA_DIR,
    logLevel: e.LOG_LEVEL,
    planCaps: { free: e.PLAN_CAP_FREE, pro: e.PLAN_CAP_PRO, enterprise: e.PLAN_CAP_ENTERPRISE },
    publicUrl: e.PUBLIC_URL,
    trustProxy: e.TRUST_PROXY === 'true',
  };
}
