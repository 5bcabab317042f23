// IP addresses and subnets as options name them ("10.0.0.5", "10.0.0.0/24",
// "fd00::/64"), and the test of an address against them: one parser and one
// matcher for trusted balancers and for allowlisted game-server subnets.
import { BlockList, isIP } from 'node:net';

export interface IpRange {
  address: string;
  /** Prefix length, or null for the one address. */
  prefix: number | null;
  family: 'ipv4' | 'ipv6';
}

/** "10.0.0.5", "10.0.0.0/24", "fd00::/64" → its parts, or null. */
export function parseIpRange(raw: string): IpRange | null {
  const [address = '', prefixText, extra] = raw.split('/');
  const f = isIP(address);
  if (f === 0 || extra !== undefined) return null;
  const family = f === 4 ? 'ipv4' : 'ipv6';
  if (prefixText === undefined) return { address, prefix: null, family };
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > (f === 4 ? 32 : 128)) return null;
  return { address, prefix: Number(prefixText), family };
}

/** A test of IP literals against `ranges` (a name, or anything else, never matches). */
export function ipMatcher(ranges: readonly IpRange[]): (address: string) => boolean {
  const list = new BlockList();
  for (const r of ranges) {
    if (r.prefix === null) list.addAddress(r.address, r.family);
    else list.addSubnet(r.address, r.prefix, r.family);
  }
  return (address) => {
    const f = isIP(address);
    return f !== 0 && list.check(address, f === 4 ? 'ipv4' : 'ipv6');
  };
}
