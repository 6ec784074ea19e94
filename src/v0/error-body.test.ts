import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { ApiError, badRequest, conflict, notFound, unauthorized } from "../errors.ts";
import { V0ErrorBody, v0ErrorBody, v0ErrorResponse } from "./error-body.ts";

const issue = (path: (string | number)[], message: string) => ({ code: "invalid", message, path });

describe("the v0 error body", () => {
  it("keeps the status, the code and the headers /v1 would send; the message becomes `error`", async () => {
    const res = v0ErrorResponse(unauthorized());
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await res.json()).toEqual({ error: unauthorized().message, code: "UNAUTHORIZED" });
    expect(v0ErrorResponse(conflict("busy")).headers.get("x-should-retry")).toBe("false");
    expect(await v0ErrorResponse(notFound("chat x")).json()).toEqual({ error: "chat x not found", code: "NOT_FOUND" });
  });

  it("turns validation issues into details by place, the first message per place winning", () => {
    const body = v0ErrorBody(
      badRequest("invalid query.limit", [
        issue(["query", "limit"], "too big"),
        issue(["query", "limit"], "second"),
        issue(["body", "reminder", "remindAtMs"], "not a number"),
      ]),
    );
    expect(body).toEqual({
      error: "invalid query.limit",
      code: "INVALID_REQUEST",
      details: { "query.limit": "too big", "body.reminder.remindAtMs": "not a number" },
    });
  });

  it("writes other details as text, and a field named like an Object property as any other place", () => {
    expect(v0ErrorBody(new ApiError(422, "X", "m", { count: 3, why: "because" })).details).toEqual({
      count: "3",
      why: "because",
    });
    const proto = v0ErrorBody(badRequest("m", [issue(["__proto__"], "odd"), issue(["constructor"], "odder")])).details!;
    expect(Object.entries(proto)).toEqual([
      ["__proto__", "odd"],
      ["constructor", "odder"],
    ]);
  });

  it("bounds what it quotes: long messages are cut and at most 20 places are listed", () => {
    const many = Array.from({ length: 30 }, (_, i) => issue(["body", `f${i}`], "x".repeat(1000)));
    const body = v0ErrorBody(badRequest("y".repeat(1000), many));
    expect(body.error.length).toBeLessThanOrEqual(301);
    expect(Object.keys(body.details!)).toHaveLength(20);
    for (const text of Object.values(body.details!)) expect(text.length).toBeLessThanOrEqual(301);
  });

  it("answers anything that is not an ApiError as a 500 that says nothing more", async () => {
    const res = v0ErrorResponse(new Error("secret internals"));
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: "internal server error", code: "INTERNAL_ERROR" });
  });

  it("matches its own schema (what the OpenAPI document publishes) in every case above", () => {
    for (const error of [
      unauthorized(),
      notFound("x"),
      badRequest("m", [issue(["query", "q"], "bad")]),
      new ApiError(422, "X", "m", { n: 1 }),
      new Error(),
    ])
      expect(v.safeParse(V0ErrorBody, v0ErrorBody(error)).success).toBe(true);
  });
});
