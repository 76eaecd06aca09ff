/**
 * The compiled derivations of the field table (src/domain/compiledFields.ts) against the loops that
 * define them (src/domain/eventFields.ts), for random stored events and create bodies: the same values,
 * the same keys in the same order, the same text, the same errors. For the real table, and for tables
 * with another field, an omissible field first and one in the middle, so that every way the compiler
 * writes a property or a separator is met.
 */
import fc from 'fast-check';
import * as compiled from '../../src/domain/compiledFields';
import { compileFields } from '../../src/domain/compiledFields';
import type * as Fields from '../../src/domain/eventFields';
import { deriveFromFields, EVENT_FIELDS, type EventField, hashInputOfStored } from '../../src/domain/eventFields';
import type * as Formats from '../../src/domain/ledger/formats';
import { canonicalEventText } from '../../src/domain/ledger/formats';

const SEVERITY: EventField = { api: 'severity', stored: 'severity_level', kind: 'text', input: ['details', 'severity'], max: 'id' };
const NOTE_FIRST: EventField = { api: 'a_note', stored: 'note', kind: 'optionalText', input: ['note'], omitWhenNull: true };
const SEEN_AT: EventField = { api: 'seen_at', stored: 'seen', kind: 'time', input: ['seen_at'], omitWhenNull: true };

const TABLES: [string, readonly EventField[]][] = [
  ['the real table', EVENT_FIELDS],
  ['with another field', [...EVENT_FIELDS, SEVERITY]],
  ['with an omissible field first and one in the middle', [NOTE_FIRST, ...EVENT_FIELDS.slice(0, 4), SEEN_AT, ...EVENT_FIELDS.slice(4)]],
];

/** Text with what JSON escapes, astral characters and (rarely) a lone surrogate. */
const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('', '"', '\\', '\u2028', 'é', '😀', '\ud800'));
const metadata = fc.oneof(fc.constant('{}'), fc.dictionary(text, fc.jsonValue()).map((value) => JSON.stringify(value)));

/** A stored event of `table` (every field a stored event has): every kind of value, omissible fields absent, null or set. */
function storedEvent(table: readonly EventField[]): fc.Arbitrary<Record<string, unknown>> {
  const entries = table.map((field): [string, fc.Arbitrary<unknown>] => {
    const value: fc.Arbitrary<unknown> =
      field.kind === 'time' ? fc.date({ noInvalidDate: true })
      : field.kind === 'json' ? metadata
      : field.kind === 'optionalText' ? fc.option(text, { nil: null })
      : text;
    return [field.stored, field.omitWhenNull ? fc.option(value, { nil: undefined }) : value];
  });
  const required = table.filter((field) => !field.omitWhenNull).map((field) => field.stored);
  return fc.record(Object.fromEntries(entries), { requiredKeys: required }).map((doc) => ({ tenant: 'org_1', seq: 1, salt: 'a'.repeat(64), ...doc }));
}

/** A create body: the table's paths with values of any type, or missing, or not objects on the way. */
function body(table: readonly EventField[]): fc.Arbitrary<Record<string, unknown>> {
  const leaf = fc.oneof(text, fc.constant(null), fc.integer(), fc.date({ noInvalidDate: true }), fc.dictionary(text, fc.jsonValue(), { maxKeys: 3 }));
  const paths = table.flatMap((field) => (field.input ? [field.input] : []));
  return fc.array(fc.tuple(fc.constantFrom(...paths), leaf), { maxLength: 20 }).chain((sets) =>
    fc.constantFrom(...[null, 'text', 7]).map((odd) => {
      const out: Record<string, unknown> = {};
      for (const [path, value] of sets) {
        let at = out;
        for (const step of path.slice(0, -1)) {
          if (typeof at[step] !== 'object' || at[step] === null) at[step] = {};
          at = at[step] as Record<string, unknown>;
        }
        at[path.at(-1) as string] = value;
      }
      // A step on the way that is not an object (the loops read nothing through it).
      if (!('resource' in out)) out.resource = odd;
      return out;
    }),
  );
}

/** The ledger's `canonicalEventText` as it is for `table`: its module loaded against that table. */
function canonicalEventTextFor(table: readonly EventField[]): typeof Formats.canonicalEventText {
  let formats: typeof Formats | undefined;
  jest.isolateModules(() => {
    const actual = jest.requireActual<typeof Fields>('../../src/domain/eventFields');
    jest.doMock('../../src/domain/eventFields', () => ({ ...actual, ...actual.deriveFromFields(table), EVENT_FIELDS: table }));
    formats = jest.requireActual<typeof Formats>('../../src/domain/ledger/formats');
    jest.dontMock('../../src/domain/eventFields');
  });
  if (!formats) throw new Error('formats not loaded');
  return formats.canonicalEventText;
}

/** What a function gives, or the error it throws (both sides must agree on either). */
function outcome(f: () => unknown): { value: unknown; keys?: string[] } | { error: string } {
  try {
    const value = f();
    return typeof value === 'object' && value !== null ? { value, keys: Object.keys(value) } : { value };
  } catch (error) {
    return { error: (error as Error).constructor.name };
  }
}

describe.each(TABLES)('compiled derivations equal the loops, %s', (_name, table) => {
  const loops = deriveFromFields(table);
  const fast = compileFields(table);
  const canonicalText = canonicalEventTextFor(table);

  test('a stored event: its API form, its JSON text, its canonical text', () => {
    fc.assert(
      fc.property(storedEvent(table), (doc) => {
        const event = doc as never;
        expect(outcome(() => fast.toApiEvent(event))).toEqual(outcome(() => loops.toApiEvent(event)));
        expect(outcome(() => fast.toApiEventJson(event))).toEqual(outcome(() => loops.toApiEventJson(event)));
        expect(outcome(() => fast.canonicalTextOfStored(event))).toEqual(outcome(() => canonicalText(loops.hashInputOfStored(event))));
      }),
      { numRuns: 300 },
    );
  });

  test('a create body: its content', () => {
    fc.assert(
      fc.property(body(table), fc.string(), (given, owner) => {
        expect(outcome(() => fast.contentOf(given, owner))).toEqual(outcome(() => loops.contentOf(given, owner)));
      }),
      { numRuns: 300 },
    );
  });
});

test('the module\'s own derivations are the real table\'s, and its canonical text is the ledger\'s', () => {
  fc.assert(
    fc.property(storedEvent(EVENT_FIELDS), (doc) => {
      const event = doc as never;
      expect(outcome(() => compiled.canonicalTextOfStored(event))).toEqual(outcome(() => canonicalEventText(hashInputOfStored(event))));
      expect(outcome(() => compiled.toApiEventJson(event))).toEqual(outcome(() => deriveFromFields(EVENT_FIELDS).toApiEventJson(event)));
    }),
    { numRuns: 200 },
  );
});

test('a field named __proto__ is refused (an object literal would take it for the prototype)', () => {
  expect(() => compileFields([...EVENT_FIELDS, { api: '__proto__', stored: 'x', kind: 'text' }])).toThrow('__proto__');
});
