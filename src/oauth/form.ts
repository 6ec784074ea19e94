import { ApiError } from "../http/errors.ts";

const MAX_FORM_BYTES = 16 * 1024;

/** Reads an `application/x-www-form-urlencoded` body (what OAuth clients and HTML forms send), bounded. */
export async function readForm(request: Request): Promise<URLSearchParams> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) throw oauthError(400, "invalid_request", "the body must be application/x-www-form-urlencoded");
  if (Number(request.headers.get("content-length") ?? 0) > MAX_FORM_BYTES) throw oauthError(413, "invalid_request", "the form is too large");
  const text = await request.text();
  if (text.length > MAX_FORM_BYTES) throw oauthError(413, "invalid_request", "the form is too large");
  return new URLSearchParams(text);
}

/**
 * An OAuth error answer (RFC 6749 §5.2: `{error, error_description}`), as an ApiError so the app's error path sends
 * it; the body is OAuth's, not the API's (`oauthErrorResponse`).
 */
export class OAuthError extends ApiError {
  constructor(status: number, readonly error: string, description: string, headers?: Record<string, string>) {
    super(status, error.toUpperCase(), description, undefined, headers);
  }
}

export const oauthError = (status: number, error: string, description: string, headers?: Record<string, string>) => new OAuthError(status, error, description, headers);

export function oauthErrorResponse(error: OAuthError): Response {
  return Response.json({ error: error.error, error_description: error.message }, { status: error.status, headers: { "cache-control": "no-store", ...error.headers } });
}

/** S256 PKCE (RFC 7636 §4.2): base64url(SHA-256(verifier)). */
export async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return btoa(String.fromCharCode(...digest)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Compares secrets without leaking where they differ. */
export function sameSecret(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
