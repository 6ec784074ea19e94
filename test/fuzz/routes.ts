/**
 * The routes the fuzzer generates requests for: every /v1 operation the app registers, with the valibot schemas it
 * validates with (src/http/route-kit.ts `Operation`), read from an app built in memory — so a new route is fuzzed
 * without anyone listing it. /v0 and MCP answer in their own error shapes and are covered by their own suites.
 */
import { createStorage } from "unstorage";
import type * as v from "valibot";
import { createApp } from "../../src/app.ts";
import type { Method } from "../../src/http/route-kit.ts";

export type Schema = v.GenericSchema;
export interface Route {
  method: Method;
  path: string;
  query?: Schema;
  body?: Schema;
  /** A multipart upload rather than JSON. */
  multipart?: boolean;
}

export async function fuzzRoutes(): Promise<Route[]> {
  const app = await createApp({ storage: createStorage() });
  await app.close();
  return app.operations
    .filter((op) => op.path.startsWith("/v1/"))
    .map((op) => ({
      method: op.method,
      path: op.path,
      query: op.query,
      body: op.body,
      multipart: op.requestBody?.content["multipart/form-data"] !== undefined,
    }));
}
