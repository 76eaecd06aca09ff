/**
 * The RFC 9162 verification walks (§2.1.3.2 inclusion, §2.1.4.2 consistency), over any hash type: the
 * caller's `node` combines two children into their parent, synchronously with Node's crypto
 * (`merkle.ts`) or by chaining promises with WebCrypto (the dashboard). No crypto here, so the
 * browser and the server run the very same steps.
 */
export type Combine<H> = (left: H, right: H) => H;

const half = (n: number) => Math.floor(n / 2);

/** The root that an inclusion path implies, or null when no tree of `size` has such a path for `index`. */
export function rootFromInclusion<H>(index: number, size: number, leaf: H, path: readonly H[], node: Combine<H>): H | null {
  if (!(index >= 0 && index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = node(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : null;
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
  for (const c of path.slice(1)) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = node(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? [fr, sr] : null;
}
