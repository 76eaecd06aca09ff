/** Plans: each has a monthly event cap (configured per installation; the free tier's is the spec's 10,000). */
export const PLANS = ['free', 'pro', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];
