import { describe, expect, it } from "vitest";
import { isLoopbackHost, isPrivateHost } from "./hosts.ts";

// The hosts an outgoing fetch (XMPP media, OAuth client metadata) must not be pointed at, as written in a URL.
describe("hosts", () => {
  it("tells private and loopback hosts from public ones", () => {
    for (const host of [
      "localhost",
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "[::1]",
      "[::ffff:10.0.0.1]",
      "fd00::1",
      "[fe80::1]",
      "0.0.0.0",
      "[::]",
    ])
      expect(isPrivateHost(host), host).toBe(true);
    for (const host of ["example.org", "8.8.8.8", "172.32.0.1", "100.128.0.1", "[2001:db8::1]", "fd.example"])
      expect(isPrivateHost(host), host).toBe(false);
  });

  it("reads an address as a URL's hostname gives it (IPv4 mapped into IPv6 comes out in hex)", () => {
    const hostname = (url: string) => new URL(url).hostname;
    for (const url of [
      "http://[::ffff:10.0.0.1]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[::ffff:169.254.169.254]/latest",
      "http://[::ffff:192.168.0.1]:8080/",
      "http://[0:0:0:0:0:ffff:ac10:1]/",
      "http://0x7f.1/",
      "http://2130706433/",
    ])
      expect(isPrivateHost(hostname(url)), `${url} → ${hostname(url)}`).toBe(true);
    for (const url of ["http://[::ffff:8.8.8.8]/", "http://[::ffff:ac20:1]/", "https://example.org/"])
      expect(isPrivateHost(hostname(url)), `${url} → ${hostname(url)}`).toBe(false);
  });

  it("tells loopback names and addresses from the rest", () => {
    for (const host of ["localhost", "LOCALHOST", "app.localhost", "127.0.0.1", "127.255.0.9", "[::1]"])
      expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ["localhost.example", "10.0.0.1", "::1", "128.0.0.1", "mylocalhost"])
      expect(isLoopbackHost(host), host).toBe(false);
  });
});
