import { createStorage } from "unstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../app.ts";
import { ensureToken } from "../services/tokens.ts";
import { V0_ENDPOINTS } from "./endpoints.ts";

type Json = Record<string, any>;
let app: App;
let document: Json;

beforeAll(async () => {
  const storage = createStorage();
  await ensureToken(storage, "reader", { scopes: ["read"] });
  app = await createApp({ storage });
  const res = await app.fetch(
    new Request("http://127.0.0.1:23373/v1/spec", { headers: { authorization: "Bearer reader" } }),
  );
  document = await res.json();
});

afterAll(() => app.close());

describe("the /v0 table", () => {
  it("names, for every endpoint, a /v1 successor the app serves", () => {
    for (const [name, { successor }] of Object.entries(V0_ENDPOINTS))
      expect(
        document.paths[successor.path]?.[successor.method.toLowerCase()],
        `${name} → ${successor.method} ${successor.path}`,
      ).toBeDefined();
  });

  it("is what the app serves under /v0: every endpoint documented as deprecated, with its successor and the v0 error body", () => {
    const served = Object.keys(document.paths).filter(
      (path) => /^\/v0\/[a-z-]+$/.test(path) && !/^\/v0\/(mcp|sse|messages)$/.test(path),
    );
    expect(served.sort()).toEqual(
      Object.keys(V0_ENDPOINTS)
        .map((name) => `/v0/${name}`)
        .sort(),
    );
    for (const [name, { method, successor }] of Object.entries(V0_ENDPOINTS)) {
      const operation = document.paths[`/v0/${name}`][method.toLowerCase()];
      expect(operation, name).toMatchObject({ deprecated: true, tags: ["v0"] });
      expect(operation.description).toContain(`${successor.method} ${successor.path}`);
      expect(operation.responses["4XX"].$ref).toBe("#/components/responses/V0Error");
      expect(operation.responses["200"].content["application/json"].schema, name).toBeDefined();
    }
  });
});
