const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|[a-z0-9-]+\.localhost)$/i;

/** localhost, *.localhost, 127.x.x.x or [::1] (a URL's hostname, or a Host header without its port). */
export const isLoopbackHost = (hostname: string) => LOOPBACK.test(hostname);

/** Literal loopback, private, link-local and unspecified addresses, and localhost names. */
export function isPrivateHost(hostname: string): boolean {
  if (isLoopbackHost(hostname)) return true;
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "0.0.0.0" || host === "::" || host === "::1") return true;
  const v4 = firstOctets(host);
  if (v4) {
    const [a, b] = v4;
    return (
      a === 127 ||
      a === 10 ||
      a === 0 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254) ||
      (a === 100 && b >= 64 && b <= 127)
    );
  }
  return /^(fc|fd|fe8|fe9|fea|feb)/.test(host) && host.includes(":");
}

/**
 * The first two octets of an IPv4 address, also one mapped into IPv6 — written dotted (`::ffff:10.0.0.1`) or as
 * the URL parser writes it (`[::ffff:10.0.0.1]` becomes `[::ffff:a00:1]`); undefined for anything else.
 */
function firstOctets(host: string): [number, number] | undefined {
  const dotted = /^(?:::ffff:)?(\d+)\.(\d+)\.\d+\.\d+$/.exec(host);
  if (dotted) return [Number(dotted[1]), Number(dotted[2])];
  const mapped = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(host);
  if (!mapped) return undefined;
  const high = Number.parseInt(mapped[1], 16);
  return [high >> 8, high & 0xff];
}
