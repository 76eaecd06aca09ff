/**
 * Where to go after signing in. `next` comes from the URL, so only a path of this site is followed:
 * `//evil.example` and `/\evil.example` (which browsers read as another host) fall back to `/`.
 */
export function safeNext(next: string | null): string {
  return next && /^\/(?![/\\])/.test(next) && !next.includes('\\') ? next : '/';
}
