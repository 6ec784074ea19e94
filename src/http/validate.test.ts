import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.ts";
import { LIMITS } from "../schema/limits.ts";
import { parseQuery, pathParam, readJson, validate } from "./validate.ts";
import { isoDate, queryArray, queryBoolean, queryInt } from "../schema/query.ts";

const query = (search: string) => parseQuery(new URL(`http://127.0.0.1/v1/x${search}`));

async function caught(work: () => unknown): Promise<ApiError> {
  try {
    await work();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected an ApiError");
}

describe("parseQuery", () => {
  it("reads + as a space, form-style (the Python SDK's encoding), %2B as a plus, and decodes escapes once", () => {
    expect(query("?query=Alan+Costa&x=%2B1%20555&y=%2525&z=a%20b")).toEqual({
      query: "Alan Costa",
      x: "+1 555",
      y: "%25",
      z: "a b",
    });
  });

  it("puts back the + of a raw time-zone offset in a date (it arrives as a space)", () => {
    expect(v.parse(isoDate, query("?d=2026-01-01T10:00:00.000+02:00").d)).toBe(Date.parse("2026-01-01T08:00:00.000Z"));
  });

  it("refuses a query string over its limit with 414", async () => {
    const error = await caught(() => query(`?query=${"a".repeat(LIMITS.queryStringBytes)}`));
    expect(error.status).toBe(414);
  });

  it("turns a repeated key into an array, with or without []", () => {
    expect(query("?accountIDs=a&accountIDs=b&accountIDs=c")).toEqual({ accountIDs: ["a", "b", "c"] });
    expect(query("?chatIDs[]=a&chatIDs%5B%5D=b")).toEqual({ chatIDs: ["a", "b"] });
    expect(query("?one=a")).toEqual({ one: "a" });
  });

  it("drops `key=`, bare keys and empty parts", () => {
    expect(query("?cursor=&direction=before&&flag&limit=")).toEqual({ direction: "before" });
    expect(query("")).toEqual({});
    expect(query("?")).toEqual({});
  });

  it("keeps `=` inside values and decodes keys", () => {
    expect(query("?q=a=b&na%6De=x")).toEqual({ q: "a=b", name: "x" });
  });

  it("answers 400 to a malformed escape, naming the parameter", async () => {
    for (const search of ["?query=%E0%A4%A", "?query=%zz", "?q%=1"]) {
      const error = await caught(() => query(search));
      expect(error.status).toBe(400);
      expect((error.details as { issues: { path: unknown[] }[] }).issues[0].path[0]).toBe("query");
    }
  });
});

describe("validate", () => {
  const Query = v.object({
    limit: v.optional(queryInt(1, 200)),
    unreadOnly: v.optional(queryBoolean),
    ids: v.optional(queryArray),
    after: v.optional(isoDate),
  });
  const Body = v.object({
    reminder: v.object({ remindAtMs: v.pipe(v.number(), v.integer()) }),
    tags: v.optional(v.array(v.string())),
  });

  it("returns typed output for valid input", () => {
    expect(
      validate("query", Query, { limit: "20", unreadOnly: "true", ids: "a", after: "2024-01-02T03:04:05Z" }),
    ).toEqual({
      limit: 20,
      unreadOnly: true,
      ids: ["a"],
      after: Date.parse("2024-01-02T03:04:05Z"),
    });
  });

  it("reports issues with paths rooted at query or body", async () => {
    const limit = await caught(() => validate("query", Query, { limit: "500" }));
    expect(limit.status).toBe(400);
    expect(limit.code).toBe("INVALID_REQUEST");
    expect((limit.details as { issues: { path: unknown[] }[] }).issues[0].path).toEqual(["query", "limit"]);
    expect(limit.message).toContain("query.limit");

    const nested = await caught(() => validate("body", Body, { reminder: { remindAtMs: "soon" } }));
    expect((nested.details as { issues: { path: unknown[] }[] }).issues[0].path).toEqual([
      "body",
      "reminder",
      "remindAtMs",
    ]);

    const item = await caught(() => validate("body", Body, { reminder: { remindAtMs: 1 }, tags: ["ok", 5] }));
    expect((item.details as { issues: { path: unknown[] }[] }).issues[0].path).toEqual(["body", "tags", 1]);
  });

  it("refuses non-integers, bad booleans and bad dates in the query", async () => {
    for (const input of [{ limit: "1.5" }, { limit: "ten" }, { unreadOnly: "yes" }, { after: "yesterday" }]) {
      expect((await caught(() => validate("query", Query, input))).status).toBe(400);
    }
  });
});

describe("readJson and pathParam", () => {
  const post = (body: string, type = "application/json") =>
    new Request("http://127.0.0.1/x", { method: "POST", body, headers: { "content-type": type } });

  it("reads JSON, and an empty body as {}", async () => {
    expect(await readJson(post('{"a":1}'))).toEqual({ a: 1 });
    expect(await readJson(post('{"a":1}', "application/vnd.api+json; charset=utf-8"))).toEqual({ a: 1 });
    expect(await readJson(post("  "))).toEqual({});
  });

  it("answers 400 to invalid JSON and 415 to another media type", async () => {
    expect((await caught(() => readJson(post("{nope")))).status).toBe(400);
    expect((await caught(() => readJson(post("a=1", "application/x-www-form-urlencoded")))).status).toBe(415);
  });

  it("decodes a path parameter once and answers 400 to a malformed one", async () => {
    expect(pathParam({ chatID: "%21abc%3Aserver%2525" }, "chatID")).toBe("!abc:server%25");
    const error = await caught(() => pathParam({ chatID: "%E0%A4%A" }, "chatID"));
    expect(error.status).toBe(400);
    expect((error.details as { issues: { path: unknown[] }[] }).issues[0].path).toEqual(["path", "chatID"]);
  });
});
