/**
 * What MongoDB's `explain` says about a query's winning plan: the stages it runs. Classic plans nest
 * `inputStage` / `inputStages`; slot-based (SBE) explains of MongoDB 7 put the same tree under
 * `queryPlanner.winningPlan.queryPlan`; a sharded explain has one per shard under `shards`.
 */
import type { Document } from 'mongodb';

/** Every stage name of every winning plan in an explain result. */
export function planStages(explain: Document): string[] {
  const stages: string[] = [];
  const walk = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    const n = node as Document;
    if (typeof n.stage === 'string') stages.push(n.stage);
    walk(n.inputStage);
    if (Array.isArray(n.inputStages)) for (const child of n.inputStages) walk(child);
    walk(n.queryPlan);
  };
  const planner = explain.queryPlanner as Document | undefined;
  walk(planner?.winningPlan);
  for (const shard of (planner?.winningPlan as Document | undefined)?.shards ?? []) walk((shard as Document).winningPlan);
  return stages;
}

/** Index reads: a plain index scan, MongoDB 8's express path, and the `_id` fast path. */
const INDEX_STAGES = new Set(['IXSCAN', 'EXPRESS_IXSCAN', 'IDHACK', 'EXPRESS_IDHACK', 'DISTINCT_SCAN', 'COUNT_SCAN']);

/** Why a plan is not "an index scan and no in-memory sort", or null when it is. */
export function planProblem(stages: string[]): string | null {
  if (stages.length === 0) return 'no winning plan in the explain output';
  if (stages.includes('COLLSCAN')) return `collection scan (${stages.join(' > ')})`;
  if (stages.some((s) => s === 'SORT' || s === 'SORT_KEY_GENERATOR')) return `in-memory sort (${stages.join(' > ')})`;
  if (!stages.some((s) => INDEX_STAGES.has(s))) return `no index stage (${stages.join(' > ')})`;
  return null;
}
