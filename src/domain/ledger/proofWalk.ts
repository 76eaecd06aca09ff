/**
 * The RFC 9162 verification walks (§2.1.3.2 inclusion, §2.1.4.2 consistency), over any hash type: the
 * caller's `node` combines two children into their parent, synchronously with Node's crypto
 * (`merkle.ts`) or by chaining promises with WebCrypto (the dashboard). No crypto here, so the
 * browser and the server run the very same steps.
 */
export type Combine<H> = (left: H, right: H) => H;

const half = (n: number) => Math.floor(n / 2);

/**
 * The walk both verifications share: for each hash of `hashes`, whether it is a left sibling (`left`)
 * or a right one (`right`) of the node reached so far, from the node at (`fn`, `sn`). False when the
 * hashes do not fit a tree of that shape (too many, or too few to reach the root).
 */
function walk<H>(fn: number, sn: number, hashes: readonly H[], left: (h: H) => void, right: (h: H) => void): boolean {
  for (const h of hashes) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      left(h);
      while (fn % 2 === 0 && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      right(h);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0;
}

/** The root that an inclusion path implies, or null when no tree of `size` has such a path for `index`. */
export function rootFromInclusion<H>(index: number, size: number, leaf: H, path: readonly H[], node: Combine<H>): H | null {
  if (!(index >= 0 && index < size)) return null;
  let r = leaf;
  const fits = walk(index, size - 1, path, (p) => { r = node(p, r); }, (p) => { r = node(r, p); });
  return fits ? r : null;
}

/**
 * The two roots that a consistency proof from a tree of `from` leaves to one of `to` implies, or null
 * when no such proof has this shape. For 0 < from < to; the caller compares the roots with the ones
 * it holds (`root1` seeds the walk when `from` is a power of two, as the RFC says).
 */
export function rootsFromConsistency<H>(from: number, to: number, proof: readonly H[], root1: H, node: Combine<H>): [H, H] | null {
  if (!(from > 0 && from < to) || proof.length === 0) return null;
  const path = (from & (from - 1)) === 0 ? [root1, ...proof] : [...proof];
  let fn = from - 1;
  let sn = to - 1;
  while (fn % 2 === 1) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0] as H;
  let sr = fr;
  const fits = walk(fn, sn, path.slice(1), (c) => {
    fr = node(c, fr);
    sr = node(c, sr);
  }, (c) => { sr = node(sr, c); });
  return fits ? [fr, sr] : null;
}
