const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|[a-z0-9-]+\.localhost)$/i;

/** localhost, *.localhost, 127.x.x.x or [::1] (a URL's hostname, or a Host header without its port). */
export const isLoopbackHost = (hostname: string) => LOOPBACK.test(hostname);

/** Literal loopback, private, link-local and unspecified addresses, and localhost names. */
export function isPrivateHost(hostname: string): boolean {
  if (isLoopbackHost(hostname)) return true;
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "0.0.0.0" || host === "::" || host === "::1") return true;
  const v4 = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(host.replace(/^::ffff:/, ""));
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
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
