/**
 * The field table's hot derivations (eventFields.ts), compiled into straight-line code: the server runs
 * them for every event (a create body's content, the stored event's API form, its canonical text for the
 * ledger's hashes, the export's JSON text). The table-driven loops read and write properties by names
 * that change from one field to the next, which V8 can only do through its generic (megamorphic) lookups,
 * and they build objects one computed key at a time; the compiled functions name every property in their
 * code, and build each object as one literal with the same shape every time.
 *
 * Server only: the code is made with `new Function`, which the dashboard's Content-Security-Policy
 * forbids; the dashboard and the verification client use eventFields' loops, which stay the definition.
 * Every compiled function equals its loop for every table (test/unit/compiledFields.test.ts, with random
 * events and bodies, for the real table and one with another field).
 */
import { canonicalJson } from './ledger/formats';
import { EVENT_FIELDS, type EventContent, type EventField, type StoredEventFields, type TEvent } from './eventFields';

export interface CompiledFields {
  /** `toApiEvent`. */
  toApiEvent: (doc: StoredEventFields) => TEvent;
  /** `toApiEventJson`. */
  toApiEventJson: (doc: StoredEventFields) => string;
  /** `canonicalEventText(hashInputOfStored(doc))`: the ledger's text of a stored event, from its fields directly. */
  canonicalTextOfStored: (doc: StoredEventFields) => string;
  /** `contentOf`. */
  contentOf: (body: Record<string, unknown>, owner: string) => EventContent;
}

/** A property name as code: a quoted string literal (never `__proto__`, which a literal would take for the prototype). */
function key(name: string): string {
  if (name === '__proto__') throw new Error('a field cannot be named __proto__');
  return JSON.stringify(name);
}

/** The stored value of `field` in `d`, as code. */
const storedOf = (field: EventField) => `d[${key(field.stored)}]`;

/** That `value` (code) is neither null nor absent, as code: an omissible field is written only then (`leftOut`). */
const presentCode = (value: string) => `${value} !== null && ${value} !== undefined`;

/** `apiValue(field, <stored value>, parseJson)` as code, reading the value from `d`. */
function apiValueCode(field: EventField, parseJson: boolean): string {
  if (field.kind === 'time') return `${storedOf(field)}.toISOString()`;
  if (field.kind === 'json') return parseJson ? `JSON.parse(${storedOf(field)})` : storedOf(field);
  return `(${storedOf(field)} ?? null)`;
}

/** A property of a compiled object: its name, its value as code, and for an omissible one what is tested for null or absence. */
interface Property {
  name: string;
  value: string;
  present?: string;
}

/**
 * An object of `properties` in their order as code, leaving out an omissible one whose value is null or
 * absent (`leftOut`): one literal up to the first omissible property, then assignments.
 */
function objectCode(properties: readonly Property[]): string {
  const firstOmissible = properties.findIndex((p) => p.present !== undefined);
  const literal = firstOmissible < 0 ? properties : properties.slice(0, firstOmissible);
  const rest = firstOmissible < 0 ? [] : properties.slice(firstOmissible);
  const lines = [`const o = { ${literal.map((p) => `${key(p.name)}: ${p.value}`).join(', ')} };`];
  for (const p of rest) {
    const assign = `o[${key(p.name)}] = ${p.value};`;
    lines.push(p.present === undefined ? assign : `if (${presentCode(p.present)}) ${assign}`);
  }
  return `${lines.join('\n')}\nreturn o;`;
}

/** A function `(d, owner)` whose body is `body`, in a scope where `params` are `args`. */
function compile(params: readonly string[], body: string, ...args: unknown[]): (...input: never[]) => unknown {
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- generated from the field table alone, never from input
  const make = new Function(...params, `"use strict";\nreturn function compiled(d, owner) {\n${body}\n};`) as (...a: unknown[]) => (...input: never[]) => unknown;
  return make(...args);
}

/** The hot derivations of `table`, compiled (the module's own: `EVENT_FIELDS`'). */
export function compileFields(table: readonly EventField[]): CompiledFields {
  const clientFields = table.filter((f) => f.input !== undefined);
  const canonicalOrder = [...table].sort((a, b) => (a.api < b.api ? -1 : a.api > b.api ? 1 : 0));

  const omissible = (f: EventField, present: string) => (f.omitWhenNull === true ? { present } : {});
  const toApiEvent = compile([], objectCode(table.map((f) => ({ name: f.api, value: apiValueCode(f, true), ...omissible(f, storedOf(f)) })))) as CompiledFields['toApiEvent'];

  /** The JSON text of fields written one after another, `"name":value`, with the opening brace or comma each needs. */
  const textCode = (fields: readonly EventField[], jsonOf: (field: EventField) => string): string => {
    const lines = ['let t = "";'];
    let written: 'none' | 'some' | 'maybe' = 'none';
    for (const f of fields) {
      const separator = written === 'none' ? JSON.stringify('{') : written === 'some' ? JSON.stringify(',') : '(t === "" ? "{" : ",")';
      // `"name":` as it is written by the loops (the name's characters as they are).
      const append = `t += ${separator} + ${JSON.stringify(`"${f.api}":`)} + ${jsonOf(f)};`;
      if (f.omitWhenNull === true) {
        lines.push(`if (${presentCode(storedOf(f))}) ${append}`);
        if (written === 'none') written = 'maybe';
      } else {
        lines.push(append);
        written = 'some';
      }
    }
    return `${lines.join('\n')}\nreturn t + "}";`;
  };

  const toApiEventJson = compile(
    [],
    textCode(table, (f) => (f.kind === 'json' ? apiValueCode(f, false) : `JSON.stringify(${apiValueCode(f, false)})`)),
  ) as CompiledFields['toApiEventJson'];

  // canonicalEventText's encoding of each value of hashInputOfStored: json fields canonicalized ('{}' as it is).
  const canonicalTextOfStored = compile(
    ['canonicalJson'],
    textCode(canonicalOrder, (f) => (f.kind === 'json' ? `(${storedOf(f)} === "{}" ? "{}" : canonicalJson(JSON.parse(${storedOf(f)})))` : `JSON.stringify(${apiValueCode(f, false)} ?? null)`)),
    canonicalJson,
  ) as CompiledFields['canonicalTextOfStored'];

  // contentOf: each client field read along its path in the body; json as its JSON text, absent text as
  // null or (organization_id) the owner. Values are computed first, in table order, as the loop does.
  const contentLines = clientFields.map((f, i) => {
    const path = (f.input ?? []).map((step) => `?.[${key(step)}]`).join('');
    const value = f.kind === 'json' ? `JSON.stringify(d${path} ?? {})` : `(d${path} ?? ${f.defaultsToOwner === true ? 'owner' : 'null'})`;
    return `const v${i} = ${value};`;
  });
  const contentOf = compile(
    [],
    `${contentLines.join('\n')}\n${objectCode(clientFields.map((f, i) => ({ name: f.stored, value: `v${i}`, ...omissible(f, `v${i}`) })))}`,
  ) as CompiledFields['contentOf'];

  return { toApiEvent, toApiEventJson, canonicalTextOfStored, contentOf };
}

/** `EVENT_FIELDS`' hot derivations, compiled. */
export const { toApiEvent, toApiEventJson, canonicalTextOfStored, contentOf } = compileFields(EVENT_FIELDS);
