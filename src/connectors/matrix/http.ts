import { NetworkError } from "../../bridges/connector.ts";

/** What a homeserver said when it refused a request (the Client-Server API's standard error body). */
export class MatrixError extends NetworkError {
  constructor(
    kind: NetworkError["kind"],
    message: string,
    readonly status: number,
    readonly errcode?: string,
    readonly retryAfterMs?: number,
    readonly softLogout = false,
  ) {
    super(kind, message, errcodeToCode(errcode, status));
  }
}

/** The connector's error codes (what a failed login session reports as `error.code`). */
function errcodeToCode(errcode: string | undefined, status: number): string | undefined {
  if (errcode === "M_FORBIDDEN" || errcode === "M_USER_DEACTIVATED") return "invalid_credentials";
  if (errcode === "M_UNKNOWN_TOKEN" || errcode === "M_MISSING_TOKEN") return "invalid_token";
  if (errcode === "M_LIMIT_EXCEEDED") return "rate_limited";
  if (status >= 500) return "server_error";
  return undefined;
}

export interface RequestOptions {
  body?: unknown;
  /**
   * A raw body (media uploads): sent as is, with its own content type. `reopen` gives the same bytes afresh, so
   * that a rate-limited upload can be repeated too (a stream is used up by the first attempt).
   */
  raw?: {
    body: ReadableStream<Uint8Array> | Uint8Array;
    contentType: string;
    length?: number;
    reopen?: () => ReadableStream<Uint8Array> | Uint8Array;
  };
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
  /** How long an answer may take to start (a long-polling /sync asks for its timeout plus a margin). */
  timeoutMs?: number;
  /** The largest JSON answer read; a bigger one is refused rather than held in memory. */
  maxBytes?: number;
  /** Rate limits (M_LIMIT_EXCEEDED) are waited out and the request repeated, up to this long in all. */
  patienceMs?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** A sync of a large account can be big; anything past this is a hostile or broken server. */
export const MAX_JSON_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_BYTES = 8 * 1024 * 1024;
const DEFAULT_PATIENCE_MS = 120_000;

/**
 * The homeserver's Client-Server API over plain fetch (so the same code runs in a Worker). Every answer is read
 * with a size limit and parsed defensively: a server answering garbage is an error, never a crash.
 */
export class MatrixHttp {
  constructor(
    readonly baseURL: string,
    private accessToken?: string,
  ) {}

  withToken(accessToken: string): MatrixHttp {
    return new MatrixHttp(this.baseURL, accessToken);
  }

  async request<T = Record<string, unknown>>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const patience = Date.now() + (options.patienceMs ?? DEFAULT_PATIENCE_MS);
    for (let attempt = options; ; ) {
      try {
        return await this.once<T>(method, path, attempt);
      } catch (error) {
        // A rate limit is waited out (what mautrix and Element do), as long as the caller's patience lasts.
        if (
          !(error instanceof MatrixError) ||
          error.errcode !== "M_LIMIT_EXCEEDED" ||
          (options.raw && !options.raw.reopen)
        )
          throw error;
        const wait = Math.min(Math.max(error.retryAfterMs ?? 1000, 100), 60_000);
        if (Date.now() + wait > patience) throw error;
        await delay(wait, options.signal);
        if (options.raw?.reopen) attempt = { ...options, raw: { ...options.raw, body: options.raw.reopen() } };
      }
    }
  }

  /** A request whose answer is streamed back (media). Errors are read as JSON errors. */
  async stream(path: string, options: Pick<RequestOptions, "signal" | "timeoutMs" | "query"> = {}): Promise<Response> {
    const response = await this.send("GET", path, options);
    if (!response.ok) throw await this.failure(response);
    return response;
  }

  private async once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const response = await this.send(method, path, options);
    const text = await readText(response, options.maxBytes ?? DEFAULT_MAX_BYTES);
    if (!response.ok) throw failureFrom(response.status, text, response.headers);
    const body = parseJSON(text);
    if (body === undefined || typeof body !== "object" || body === null || Array.isArray(body))
      throw new MatrixError(
        "unavailable",
        `${this.host()} answered ${method} ${path.split("?")[0]} with something that is not a Matrix JSON object`,
        response.status,
        undefined,
        undefined,
        false,
      );
    return body as T;
  }

  private async send(method: string, path: string, options: RequestOptions): Promise<Response> {
    const url = new URL(path, this.baseURL);
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const headers = new Headers();
    if (this.accessToken) headers.set("authorization", `Bearer ${this.accessToken}`);
    let body: BodyInit | undefined;
    if (options.raw) {
      headers.set("content-type", options.raw.contentType);
      if (options.raw.length !== undefined) headers.set("content-length", String(options.raw.length));
      body = options.raw.body as BodyInit;
    } else if (options.body !== undefined) {
      headers.set("content-type", "application/json");
      body = JSON.stringify(options.body);
    }
    const started = new AbortController();
    const timer = setTimeout(
      () =>
        started.abort(new Error(`no answer within ${Math.round((options.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)} s`)),
      options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    );
    const signal = options.signal ? AbortSignal.any([options.signal, started.signal]) : started.signal;
    try {
      return await fetch(url, {
        method,
        headers,
        body,
        signal,
        redirect: "follow",
        ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit);
    } catch (error) {
      if (options.signal?.aborted) throw new NetworkError("unavailable", "cancelled", "cancelled");
      const reason = started.signal.aborted
        ? String((started.signal.reason as Error)?.message ?? "timed out")
        : error instanceof Error
          ? causeOf(error)
          : String(error);
      throw new NetworkError("unavailable", `cannot reach ${this.host()}: ${reason}`, "unreachable");
    } finally {
      clearTimeout(timer);
    }
  }

  private async failure(response: Response): Promise<MatrixError> {
    return failureFrom(response.status, await readText(response, 64 * 1024).catch(() => ""), response.headers);
  }

  private host() {
    return new URL(this.baseURL).host;
  }
}

function failureFrom(status: number, text: string, headers: Headers): MatrixError {
  const body = parseJSON(text) as
    | { errcode?: unknown; error?: unknown; retry_after_ms?: unknown; soft_logout?: unknown }
    | undefined;
  const errcode = typeof body?.errcode === "string" ? body.errcode.slice(0, 100) : undefined;
  const said = typeof body?.error === "string" ? body.error.slice(0, 300) : undefined;
  const retryHeader = Number(headers.get("retry-after"));
  const retryAfterMs =
    typeof body?.retry_after_ms === "number"
      ? body.retry_after_ms
      : Number.isFinite(retryHeader) && retryHeader > 0
        ? retryHeader * 1000
        : undefined;
  const kind: NetworkError["kind"] =
    status === 404 ? "not_found" : status >= 500 || status === 429 ? "unavailable" : "rejected";
  const message = said ? `${said}${errcode ? ` (${errcode})` : ""}` : `HTTP ${status}${errcode ? ` ${errcode}` : ""}`;
  return new MatrixError(kind, message, status, errcode, retryAfterMs, body?.soft_logout === true);
}

/** Reads a body as UTF-8 (bad sequences become U+FFFD), refusing one longer than `maxBytes`. */
async function readText(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get("content-length"));
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new NetworkError(
      "unavailable",
      `the homeserver's answer is larger than ${maxBytes} bytes`,
      "answer_too_large",
    );
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new NetworkError(
        "unavailable",
        `the homeserver's answer is larger than ${maxBytes} bytes`,
        "answer_too_large",
      );
    }
    text += decoder.decode(value, { stream: true });
  }
  return text + decoder.decode();
}

function parseJSON(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function causeOf(error: Error): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? error.message;
}

export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Path segments are always encoded: room IDs, event IDs and user IDs carry `!`, `$`, `@` and `:`. */
export const seg = encodeURIComponent;
