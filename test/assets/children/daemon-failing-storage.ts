/**
 * Run as a child process by test/assets/node.test.ts (if the daemon freezes, it must not freeze the test runner):
 * the daemon's app over HTTP whose asset storage fails on its third chunk write, as a full disk would. Prints
 * `{"url": …, "token": …}` once listening, then serves until killed.
 */
import { createStorage, type Storage } from "unstorage";
import { serve as listen } from "srvx";
import { createApp } from "../../../src/app.ts";
import { ensureToken } from "../../../src/services/tokens.ts";

const token = "rw_failing_storage_child";
const storage = createStorage();
await ensureToken(storage, token, { name: "rw", scopes: ["read", "write"] });

const chunks = createStorage();
let writes = 0;
const failing = new Proxy(chunks, {
  get(target, prop, receiver) {
    if (prop === "setItemRaw")
      return async (key: string, value: Uint8Array) => {
        await new Promise((r) => setTimeout(r, 5));
        if (++writes === 3) throw new Error("ENOSPC: no space left on device");
        return chunks.setItemRaw(key, value);
      };
    const value = Reflect.get(target, prop, receiver);
    return typeof value === "function" ? value.bind(target) : value;
  },
}) as Storage;

const app = await createApp({ storage, allowedHosts: [], assets: { storage: failing } });
const server = listen({
  port: 0,
  hostname: "127.0.0.1",
  fetch: (request) => app.fetch(request),
  silent: true,
  gracefulShutdown: false,
  maxRequestBodySize: 520 * 1024 * 1024,
});
await server.ready();
const address = server.node!.server!.address();
const port = typeof address === "object" && address ? address.port : 0;
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, token })}\n`);
