/**
 * The plain in-memory model of what the service promised (issue 34): every event it acknowledged, which
 * of them were lawfully removed and how, the legal holds, the retention policy's history, the
 * Idempotency-Keys used. Written from the README's words, not from the service's code: the commands
 * (commands.ts) predict with it, and the checks (check.ts) hold the service to it after every step.
 */

export const DAY_MS = 86_400_000;
/** IDEMPOTENCY_TTL_HOURS's default: a key is forgotten this long after its first use. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/** RETENTION_NOTICE_DAYS's default: a shorter (or first) policy waits this long. */
export const NOTICE_DAYS = 7;
/** The model's clock starts here; only the advanceClock command moves it. */
export const START_TIME = Date.UTC(2026, 0, 5, 12);

/** A small pool of actors, so that an erasure by actor hits several events. */
export const ACTORS = ['a0', 'a1', 'a2', 'a3'] as const;
export type Actor = (typeof ACTORS)[number];
/**
 * Actions in the service's own namespace, as a client might send them: the README ("The service's names
 * are its own") says `audit_ledger.` in any case, after trimming, is refused with 400 and nothing of the
 * request is stored (a batch is all or none). Before that rule such an event was stored and then never
 * erased: the model test found it (regressions.test.ts).
 */
export const LOOKALIKE_ACTIONS = ['audit_ledger.retention.erased', 'Audit_Ledger.member.joined', ' audit_ledger.retention.policy_changed'] as const;
export const PLAIN_ACTIONS = ['invoice.paid', 'user.login'] as const;

/** What a command says about one event it sends: who, and whether its action is in the service's namespace. */
export interface EventSpec {
  actor: Actor;
  lookalike: boolean;
}

/** A create body, as sent (POST /v1/events, or one element of a batch). */
export interface CreateBody {
  actor: { id: string; name: string; email: string };
  action: string;
  resource: { type: string; id: string; name: string };
  metadata: { marker: string; n: number };
  /** Given by a producer's signed body only (signedWrite): the model's clock, and its signature. */
  timestamp?: string;
  producer_signature?: string;
}

export type RemovalKind = 'erased' | 'pruned';

export interface ModelEvent {
  id: string;
  /** Its sequence number, from the write's receipt (`ledger.leaf_index + 1`). */
  seq: number;
  actor: Actor;
  action: string;
  /** A string found only in this event's content: it must never be returned once the event is removed. */
  marker: string;
  body: CreateBody;
  /** The service's clock when it was acknowledged (its `timestamp`: no body sets one). */
  receivedAt: number;
  /** Set once removed: how, and the wall-clock time the removal was answered (streams may race it until then). */
  removed: { kind: RemovalKind; at: number } | null;
}

export interface ModelKey {
  key: string;
  kind: 'event' | 'batch';
  /** The request body as sent: a replay sends it again. */
  body: CreateBody | { events: CreateBody[] };
  ids: string[];
  firstUse: number;
}

export interface ModelHold {
  id: string;
  /** The held actor; null: a hold on everything. */
  actor: Actor | null;
}

export interface PolicyChange {
  /** null: for ever. */
  days: number | null;
  effectiveAt: number;
  recordedAt: number;
}

/**
 * How a database writer (behind the service's back, without the signing key file) forges a row
 * (commands.ts, PlantForeign): an event shaped like a stored one at the next sequence number or `k`
 * past it, with no MAC or one copied from another row; a retention entry of the service's claiming
 * ranges of existing events (a forged authority); or a genuine row of one organization copied into the
 * other (`copyIn`: the other's into the model's; `copyOut`: the model's into the other's), MAC kept.
 */
export type PlantVariant = 'next' | 'ahead' | 'authority' | 'copyIn' | 'copyOut';

/** A row written behind the service's back: it must never be served, signed, delivered or taken as authority. */
export interface PlantedRow {
  id: string;
  /** Which organization's rows it sits among. */
  org: 'model' | 'other';
  seq: number;
  variant: PlantVariant;
  /** A string of its content no answer to its organization may hold (for a copy, the original's marker). */
  marker: string;
}

/** An event of the other organization, acknowledged 201 (written only to have rows to copy across). */
export interface OtherEvent {
  id: string;
  seq: number;
  marker: string;
}

export interface Model {
  /** The service's clock (ms). */
  now: number;
  /** Every acknowledged event, in the order of acknowledgement. */
  events: ModelEvent[];
  byId: Map<string, ModelEvent>;
  keys: ModelKey[];
  holds: ModelHold[];
  policies: PolicyChange[];
  /** Events the prune job said it removed, the service's own records included (it answers a count). */
  prunedTotal: number;
  /** Markers of bodies the service refused: they must never be stored or returned. */
  neverStored: string[];
  secondRunning: boolean;
  stream: boolean;
  /** Rows a database writer planted (PlantForeign), in order. */
  planted: PlantedRow[];
  /** The other organization's acknowledged events; null until a plant first needed the organization. */
  other: OtherEvent[] | null;
  /** For fresh markers and keys. */
  counter: number;
  /** Distinguishes this run's markers and keys from any other run's. */
  tag: string;
}

export function newModel(tag: string): Model {
  return {
    now: START_TIME, events: [], byId: new Map(), keys: [], holds: [], policies: [], prunedTotal: 0, neverStored: [],
    secondRunning: false, stream: false, planted: [], other: null, counter: 0, tag,
  };
}

/** The ids of the rows planted among an organization's. */
export const plantedIds = (m: Model, org: PlantedRow['org'] = 'model'): Set<string> => new Set(m.planted.filter((p) => p.org === org).map((p) => p.id));

export const isPresent = (event: ModelEvent): boolean => event.removed === null;
export const presentEvents = (m: Model): ModelEvent[] => m.events.filter(isPresent);
export const removedEvents = (m: Model): ModelEvent[] => m.events.filter((e) => !isPresent(e));
export const removedCount = (m: Model, kind: RemovalKind): number => m.events.filter((e) => e.removed?.kind === kind).length;

/** A fresh marker: no other body of this run holds it. */
export function freshMarker(m: Model): string {
  m.counter += 1;
  return `mk${m.tag}n${m.counter}z`;
}

export function freshKey(m: Model): string {
  m.counter += 1;
  return `key-${m.tag}-${m.counter}`;
}

/** A create body for `spec`, its content unique to it through `marker`. */
export function bodyOf(spec: EventSpec, marker: string, n: number): CreateBody {
  return {
    actor: { id: spec.actor, name: `name ${marker}`, email: `${spec.actor}@example.com` },
    action: spec.lookalike ? (LOOKALIKE_ACTIONS[n % LOOKALIKE_ACTIONS.length] as string) : (PLAIN_ACTIONS[n % PLAIN_ACTIONS.length] as string),
    resource: { type: 'document', id: `res-${marker}`, name: `doc ${marker}` },
    metadata: { marker, n },
  };
}

/** Records an acknowledged event. */
export function acknowledge(m: Model, id: string, seq: number, body: CreateBody): ModelEvent {
  const event: ModelEvent = {
    id, seq, actor: body.actor.id as Actor, action: body.action, marker: body.metadata.marker, body, receivedAt: m.now, removed: null,
  };
  m.events.push(event);
  m.byId.set(id, event);
  return event;
}

export function keyExpired(m: Readonly<Model>, key: ModelKey): boolean {
  return m.now >= key.firstUse + IDEMPOTENCY_TTL_MS;
}
export const liveKeys = (m: Readonly<Model>): ModelKey[] => m.keys.filter((k) => !keyExpired(m, k));
export const expiredKeys = (m: Readonly<Model>): ModelKey[] => m.keys.filter((k) => keyExpired(m, k));

export const holdsEverything = (m: Model): boolean => m.holds.some((h) => h.actor === null);
export const isHeld = (m: Model, event: ModelEvent): boolean => m.holds.some((h) => h.actor === null || h.actor === event.actor);

/**
 * The policy in force at `time` (README: a change takes effect at its effective time, unless a later
 * change was recorded before then, which cancels it); null: none, events are kept for ever.
 */
export function policyAt(changes: readonly PolicyChange[], time: number): PolicyChange | null {
  let found: PolicyChange | null = null;
  for (const [i, change] of changes.entries()) {
    const cancelled = changes.slice(i + 1).some((later) => later.recordedAt < change.effectiveAt);
    if (!cancelled && change.effectiveAt <= time) found = change;
  }
  return found;
}

/** The days in force now (null: for ever). */
export const daysInForce = (m: Model): number | null => policyAt(m.policies, m.now)?.days ?? null;

/** Records a policy change as the README says the service does: a shorter (or first) one after the notice. */
export function recordPolicy(m: Model, days: number | null): PolicyChange {
  const inForce = daysInForce(m);
  const shorter = days !== null && (inForce === null || days < inForce);
  const change = { days, effectiveAt: m.now + (shorter ? NOTICE_DAYS * DAY_MS : 0), recordedAt: m.now };
  m.policies.push(change);
  return change;
}

/** The pending change, as the retention view shows it: the latest, when it is not yet in force. */
export function pendingPolicy(m: Model): PolicyChange | null {
  const latest = m.policies.at(-1);
  return latest && latest.effectiveAt > m.now ? latest : null;
}

/**
 * What a prune run at the model's time removes of the client's events, and how many of them a hold keeps:
 * with a policy in force and no hold on everything, events received before now − days, unless held.
 */
export function expectedPrune(m: Model): { removed: ModelEvent[]; held: number } {
  const days = daysInForce(m);
  if (days === null || holdsEverything(m)) return { removed: [], held: 0 };
  const cutoff = m.now - days * DAY_MS;
  const old = presentEvents(m).filter((e) => e.receivedAt < cutoff);
  return { removed: old.filter((e) => !isHeld(m, e)), held: old.filter((e) => isHeld(m, e)).length };
}

/** What an erasure of these events removes and how many holds keep (a hold on everything refuses it: 409). */
export function expectedErasure(m: Model, targets: readonly ModelEvent[]): { removed: ModelEvent[]; held: number } {
  const present = targets.filter(isPresent);
  return { removed: present.filter((e) => !isHeld(m, e)), held: present.filter((e) => isHeld(m, e)).length };
}

export function markRemoved(events: readonly ModelEvent[], kind: RemovalKind): void {
  const at = Date.now();
  for (const event of events) event.removed = { kind, at };
}

/** `n` mod the length, for commands that pick among what the model holds when they run. */
export function pick<T>(items: readonly T[], n: number): T {
  if (items.length === 0) throw new Error('pick from nothing: the command\'s check should have refused it');
  return items[n % items.length] as T;
}
