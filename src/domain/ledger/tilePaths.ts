/**
 * The paths and entry bundles of c2sp.org/tlog-tiles, pure: `tile/<L>/<N>[.p/<W>]` and
 * `tile/entries/<N>[.p/<W>]`, where N is written in groups of three digits with an `x` before all but the
 * last (`x001/x234/067`), and an entry bundle is each entry prefixed by its length as a big-endian uint16.
 */
import { TILE_WIDTH } from './tiles';

/** N in the path's spelling. */
export function tileIndexPath(index: number): string {
  let out = String(index % 1000).padStart(3, '0');
  for (let rest = Math.floor(index / 1000); rest > 0; rest = Math.floor(rest / 1000)) out = `x${String(rest % 1000).padStart(3, '0')}/${out}`;
  return out;
}

export interface TileRequest {
  /** A tile level, or 'entries' for an entry bundle. */
  level: number | 'entries';
  index: number;
  /** 256 for a full tile, 1-255 for a partial one. */
  width: number;
}

/**
 * Parses what follows `tile/` in a request path; null when it is not a path the spec allows (a leading
 * zero in a level, a group without its `x`, a width out of 1-255, a level above 63).
 */
export function parseTilePath(path: string): TileRequest | null {
  const parts = path.split('/');
  const head = parts.shift();
  let level: number | 'entries';
  if (head === 'entries') level = 'entries';
  else if (head !== undefined && /^(0|[1-9][0-9]?)$/.test(head) && Number(head) <= 63) level = Number(head);
  else return null;
  let width = TILE_WIDTH;
  const partial = parts.length >= 2 && parts[parts.length - 2]?.endsWith('.p');
  if (partial) {
    const w = parts.pop() as string;
    if (!/^[1-9][0-9]{0,2}$/.test(w) || Number(w) >= TILE_WIDTH) return null;
    width = Number(w);
    parts[parts.length - 1] = (parts[parts.length - 1] as string).slice(0, -2);
  }
  if (parts.length === 0) return null;
  let index = 0;
  for (const [i, part] of parts.entries()) {
    const last = i === parts.length - 1;
    const match = (last ? /^([0-9]{3})$/ : /^x([0-9]{3})$/).exec(part);
    if (!match) return null;
    index = index * 1000 + Number(match[1]);
  }
  if (!Number.isSafeInteger(index)) return null;
  return { level, index, width };
}

/** The entries of a bundle (`entryBundle`'s reverse); a truncated last entry is left out. */
export function parseEntryBundle(bundle: Buffer): Buffer[] {
  const entries: Buffer[] = [];
  for (let at = 0; at + 2 <= bundle.length; ) {
    const length = bundle.readUInt16BE(at);
    if (at + 2 + length > bundle.length) break;
    entries.push(bundle.subarray(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return entries;
}

/** An entry bundle: each entry as a big-endian uint16 length and its bytes. */
export function entryBundle(entries: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    if (entry.length > 0xffff) throw new RangeError('an entry of a bundle is at most 65,535 bytes');
    const length = Buffer.alloc(2);
    length.writeUInt16BE(entry.length);
    parts.push(length, Buffer.from(entry));
  }
  return Buffer.concat(parts);
}
