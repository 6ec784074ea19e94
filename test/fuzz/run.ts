/**
 * Sends fuzz requests to a daemon and judges every answer: no 5xx, every error a JSON body of the documented shape
 * ({code, message, details?: {issues: [{code, message, path}]}}) with a bounded message, every answer within
 * ANSWER_LIMIT_MS (a stalled connection shows up as a missing answer), and the daemon still answering at the end.
 */
import { request, type Dispatcher } from "undici";
import type { FuzzRequest } from "./generate.ts";

export const ANSWER_LIMIT_MS = 2_000;
/** Error messages quote at most ~100 characters of a value; the whole message stays well under this. */
const MAX_ERROR_MESSAGE = 400;

export interface Failure {
  label: string;
  reason: string;
  status?: number;
  body?: string;
}

export interface FuzzResult {
  sent: number;
  failures: Failure[];
  statuses: Record<number, number>;
  slowestMs: number;
  slowest: string;
}

function judge(sent: FuzzRequest, status: number, contentType: string, text: string): string | undefined {
  if (status >= 500) return `server error ${status}`;
  if (status < 400 || sent.method === "HEAD") {
    if (/json/.test(contentType) && text) {
      try {
        JSON.parse(text);
      } catch {
        return "a JSON content type with a body that is not JSON";
      }
    }
    return undefined;
  }
  if (!/^application\/json/.test(contentType)) return `error answer is ${contentType || "untyped"}, not JSON`;
  let body: { code?: unknown; message?: unknown; details?: { issues?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    return "error body is not JSON";
  }
  if (typeof body.code !== "string" || !body.code) return "error body has no code";
  if (typeof body.message !== "string" || !body.message) return "error body has no message";
  if (body.message.length > MAX_ERROR_MESSAGE) return `error message of ${body.message.length} characters`;
  if (text.length > 8 * 1024) return `error body of ${text.length} bytes`;
  if (body.details !== undefined) {
    const issues = body.details?.issues;
    if (issues !== undefined) {
      if (!Array.isArray(issues)) return "details.issues is not an array";
      for (const issue of issues as { code?: unknown; message?: unknown; path?: unknown }[])
        if (typeof issue.code !== "string" || typeof issue.message !== "string" || !Array.isArray(issue.path))
          return "an issue is not {code, message, path}";
    }
  }
  return undefined;
}

export async function runFuzz(options: {
  url: string;
  token: string;
  requests: FuzzRequest[];
  concurrency: number;
  onProgress?: (done: number, failures: number) => void;
}): Promise<FuzzResult> {
  const result: FuzzResult = { sent: 0, failures: [], statuses: {}, slowestMs: 0, slowest: "" };
  let next = 0;
  async function worker() {
    while (next < options.requests.length) {
      const fuzz = options.requests[next++];
      const started = performance.now();
      try {
        // undici's request rather than fetch: fetch refuses a body on GET and HEAD, which the fuzzer sends too.
        const response = await request(`${options.url}${fuzz.path}`, {
          method: fuzz.method as Dispatcher.HttpMethod,
          headers: { authorization: `Bearer ${options.token}`, ...fuzz.headers },
          body: fuzz.body,
          signal: AbortSignal.timeout(ANSWER_LIMIT_MS),
        });
        const text = await response.body.text();
        const ms = performance.now() - started;
        result.statuses[response.statusCode] = (result.statuses[response.statusCode] ?? 0) + 1;
        if (ms > result.slowestMs) [result.slowestMs, result.slowest] = [ms, fuzz.label];
        const reason = judge(fuzz, response.statusCode, String(response.headers["content-type"] ?? ""), text);
        if (reason)
          result.failures.push({ label: fuzz.label, reason, status: response.statusCode, body: text.slice(0, 300) });
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code;
        const reason =
          (error as Error).name === "TimeoutError"
            ? `no answer within ${ANSWER_LIMIT_MS} ms`
            : `${(error as Error).message}${cause ? ` (${cause})` : ""}`;
        result.failures.push({ label: fuzz.label, reason });
      }
      result.sent++;
      if (result.sent % 250 === 0) options.onProgress?.(result.sent, result.failures.length);
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return result;
}
