const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|[a-z0-9-]+\.localhost)$/i;

/** localhost, *.localhost, 127.x.x.x or [::1] (a URL's hostname, or a Host header without its port). */
export const isLoopbackHost = (hostname: string) => LOOPBACK.test(hostname);
