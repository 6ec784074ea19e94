import { expect } from "vitest";
import type { Answer } from "../kit/http.ts";
import type { ErrorBody, Issues } from "./kit.ts";

/** What a 401 says, on both runtimes: that a token is needed, and where one comes from (the daemon's CLI, the Worker's secret). */
export const UNAUTHORIZED_MESSAGE =
  "access token is missing or invalid: send the header Authorization: Bearer <token>, with a token from `inboxd token create` (on a Cloudflare Worker: its admin token, the INBOXD_ADMIN_TOKEN secret)";

/** A /v1 error answer: status, JSON content type, version header, `{code, message}` and (optionally) the issue path. */
export function expectError(res: Answer, status: number, issuePath?: (string | number)[]) {
  expect(res.status, `status of ${res.text}`).toBe(status);
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  expect(res.headers.get("x-beeper-desktop-version")).toBeTruthy();
  const body = res.body as ErrorBody;
  expect(typeof body?.code, res.text).toBe("string");
  expect(body.code.length).toBeGreaterThan(0);
  expect(typeof body.message).toBe("string");
  expect(body.message.length).toBeGreaterThan(0);
  const issues = (body.details as Issues | undefined)?.issues;
  if (issues) {
    for (const issue of issues) {
      expect(typeof issue.code).toBe("string");
      expect(typeof issue.message).toBe("string");
      expect(Array.isArray(issue.path)).toBe(true);
    }
  }
  if (issuePath) {
    // An issue at the named place or inside it (e.g. ["query","mediaTypes",0] for ["query","mediaTypes"]).
    const paths = (issues ?? []).map((i) => i.path);
    const hit = paths.some((p) => issuePath.every((part, k) => p[k] === part));
    expect(hit, `issues of ${res.text} should name ${JSON.stringify(issuePath)}`).toBe(true);
  }
}

/** Awaits an SDK call that must fail, and checks the error class and status. */
export async function expectSdkError(
  promise: Promise<unknown>,
  errorClass: abstract new (...args: any[]) => Error,
  status: number,
): Promise<any> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, "the call should have failed").toBeInstanceOf(errorClass);
  expect((caught as { status?: number }).status).toBe(status);
  return caught;
}

/** Asserts `values` is sorted by `key`, non-increasing (desc) or non-decreasing (asc). */
export function expectSorted<T>(values: T[], key: (v: T) => number | string, order: "desc" | "asc") {
  for (let i = 1; i < values.length; i++) {
    const a = key(values[i - 1]);
    const b = key(values[i]);
    if (order === "desc" ? a < b : a > b) expect.fail(`not ${order} at index ${i}: ${String(a)} then ${String(b)}`);
  }
}
