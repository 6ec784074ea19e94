import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../app.ts";
import { createToken, TokenVerifier } from "../services/tokens.ts";
import { Admission } from "./admission.ts";
import { Pipeline } from "./pipeline.ts";

// The pipeline finds a path without parameters in its table of exact paths, and any other path through
// itty-router. `/v1/x/` (a trailing slash) is the same route to the router but misses the table, so each pair below
// takes both ways: the table must pick what the router picks, and answer it the same.
describe("the pipeline's table of exact paths", () => {
  let app: App;
  let token: string;
  const storage = createStorage();
  beforeAll(async () => {
    app = await createApp({ storage });
    token = (await createToken(storage, { scopes: ["read", "write"] })).token;
  });
  afterAll(() => app.close());

  const ask = (method: string, path: string, auth = true) =>
    app.fetch(
      new Request(`http://127.0.0.1:23373${path}`, {
        method,
        headers: auth ? { authorization: `Bearer ${token}` } : {},
      }),
    );

  it("answers every GET and HEAD without path parameters as the router does", async () => {
    const ops = app.operations.filter(
      // Event streams stay open; they are answered by the same route either way.
      (op) => op.method === "GET" && !/[:*]/.test(op.path) && !op.path.endsWith("/") && !/events|mcp/.test(op.path),
    );
    expect(ops.length).toBeGreaterThan(10);
    // A public path is public only as written (`/v1/info/` asks for a token), so it is compared with one only.
    for (const { path, scope } of ops)
      for (const method of ["GET", "HEAD"])
        for (const auth of scope === "public" ? [true] : [true, false]) {
          const [exact, routed] = await Promise.all([ask(method, path, auth), ask(method, `${path}/`, auth)]);
          const what = `${method} ${path}${auth ? "" : " without a token"}`;
          expect({ what, status: exact.status }).toEqual({ what, status: routed.status });
          expect({ what, type: exact.headers.get("content-type") }).toEqual({
            what,
            type: routed.headers.get("content-type"),
          });
          await Promise.all([exact.body?.cancel(), routed.body?.cancel()]);
        }
  });

  it("leaves a path to the route added before it that matches it", async () => {
    // No such pair exists in the app today; a pipeline of its own has one: /t/:id is added before /t/fixed.
    const pipeline = new Pipeline({
      context: app.context,
      admission: new Admission(new TokenVerifier(storage), undefined),
      guard: {},
      remoteAccess: false,
    });
    const op = (path: string) =>
      ({ method: "GET", path, operationId: path, summary: path, tag: "t", scope: "public" }) as const;
    pipeline.api.add(op("/t/:id"), ({ params }) => ({ by: "param", id: params.id }));
    pipeline.api.add(op("/t/fixed"), () => ({ by: "fixed" }));
    pipeline.api.add(op("/u/fixed"), () => ({ by: "fixed" }));
    pipeline.api.add(op("/v/nothing"), () => undefined);
    pipeline.seal();
    const get = async (path: string) => (await pipeline.fetch(new Request(`http://127.0.0.1:23373${path}`))).json();
    expect(await get("/t/fixed")).toEqual({ by: "param", id: "fixed" });
    expect(await get("/u/fixed")).toEqual({ by: "fixed" });
    const head = await pipeline.fetch(new Request("http://127.0.0.1:23373/u/fixed", { method: "HEAD" }));
    expect([head.status, await head.text()]).toEqual([200, ""]);
    // A route that answers nothing falls through to the router's fallback (what itty-router does): a 405 here.
    const nothing = await pipeline.fetch(new Request("http://127.0.0.1:23373/v/nothing"));
    expect(nothing.status).toBe(405);
    expect((await nothing.json()).code).toBe("METHOD_NOT_ALLOWED");
  });
});
