/**
 * The public API, as any client calls it: a bearer token on every request, JSON in and out. A 401 tries the
 * refresh token once; when that fails too, the page starts over at sign-in.
 */
import type { Account, Chat, Message, Page } from "../../src/schema/wire.ts";
import { loadCredentials, refreshCredentials } from "./auth.ts";

export type { Account, Chat, Message, Page };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Called when the page holds no usable token any more. */
export let onSignedOut: () => void = () => undefined;
export const setSignedOutHandler = (handler: () => void) => (onSignedOut = handler);

export function currentToken(): string | undefined {
  return loadCredentials()?.accessToken;
}

async function send(path: string, init: RequestInit, token: string | undefined): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  return fetch(path, { ...init, headers });
}

/**
 * A request with the page's token, renewed first when it is about to expire and once more on a 401; the answer as
 * it came, whatever its status (the API reference at /docs sends its "Try it out" requests through this too).
 */
export async function authorizedFetch(path: string, init: RequestInit = {}): Promise<Response> {
  let credentials = loadCredentials();
  if (credentials?.expiresAt && credentials.expiresAt - Date.now() < 30_000)
    credentials = (await refreshCredentials(credentials.accessToken)) ?? credentials;
  let response = await send(path, init, credentials?.accessToken);
  if (response.status === 401 && credentials) {
    const renewed = await refreshCredentials(credentials.accessToken);
    if (renewed) response = await send(path, init, renewed.accessToken);
  }
  return response;
}

/** A request with the page's token (renewed when it expired); a non-2xx answer throws ApiError with the server's words. */
export async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const response = await authorizedFetch(path, init);
  if (response.status === 401) onSignedOut();
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as {
      message?: string;
      code?: string;
      error?: string | { message?: string };
    };
    const message =
      body.message ??
      (typeof body.error === "string" ? body.error : body.error?.message) ??
      `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, message, body.code);
  }
  return response;
}

export async function get<T>(
  path: string,
  query?: Record<string, string | number | boolean | string[] | undefined>,
): Promise<T> {
  return (await request(withQuery(path, query))).json() as Promise<T>;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await request(
    path,
    body === undefined
      ? { method }
      : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );
  return (
    response.status === 204
      ? undefined
      : response.headers.get("content-type")?.includes("json")
        ? response.json()
        : undefined
  ) as Promise<T>;
}

export function withQuery(
  path: string,
  query?: Record<string, string | number | boolean | string[] | undefined>,
): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) params.append(key, String(one));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export const enc = encodeURIComponent;

/** Uploads a file (multipart, as the API takes it) for a message attachment. */
export async function upload(
  file: File,
): Promise<{ uploadID: string; fileName: string; mimeType: string; width?: number; height?: number }> {
  const form = new FormData();
  form.append("file", file, file.name);
  return (await request("/v1/assets/upload", { method: "POST", body: form })).json();
}

const blobs = new Map<string, Promise<string>>();

/**
 * An attachment as a blob: URL. `<img src>` cannot carry a bearer token, so the page fetches the bytes through
 * /v1/assets/serve with its token and shows them from memory (the page's CSP allows blob: images only).
 */
export function assetURL(srcURL: string): Promise<string> {
  let found = blobs.get(srcURL);
  if (!found) {
    found = request(withQuery("/v1/assets/serve", { url: srcURL }))
      .then((r) => r.blob())
      .then((b) => URL.createObjectURL(b));
    found.catch(() => blobs.delete(srcURL));
    blobs.set(srcURL, found);
  }
  return found;
}

/** Everything one page of a list needs. */
export type ChatPage = Page<Chat>;
export type MessagePage = Page<Message>;
