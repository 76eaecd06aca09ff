/**
 * The client address that sign-in and sign-up throttling counts by. One IPv6 subscriber usually holds a
 * whole /64 and can pick any address in it, so IPv6 clients are counted per /64; an IPv4-mapped IPv6
 * address (`::ffff:203.0.113.7`) is its IPv4 address.
 */
import ipaddr from 'ipaddr.js';

/** Addresses met lately and what they count as: every request with credentials asks (http/strangers.ts). */
const known = new Map<string, string>();
const KNOWN_MAX = 10_000;

export function throttleAddress(ip: string): string {
  let counted = known.get(ip);
  if (counted === undefined) {
    if (known.size >= KNOWN_MAX) known.clear();
    counted = countedAs(ip);
    known.set(ip, counted);
  }
  return counted;
}

function countedAs(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.parse(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${new ipaddr.IPv6([...v6.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}
