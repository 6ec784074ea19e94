import { ApiError } from "../errors.ts";
import { readCapped } from "../http/validate.ts";
import { base64urlOfBytes, sameSecret } from "../util/encoding.ts";

const MAX_FORM_BYTES = 16 * 1024;

/** Reads an `application/x-www-form-urlencoded` body (what OAuth clients and HTML forms send), bounded as it streams. */
export async function readForm(request: Request): Promise<URLSearchParams> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\b/i.test(type))
    throw oauthError(400, "invalid_request", "the body must be application/x-www-form-urlencoded");
  return new URLSearchParams(await readCapped(request, MAX_FORM_BYTES));
}

/**
 * An OAuth error answer (RFC 6749 §5.2: `{error, error_description}`), as an ApiError so the app's error path sends
 * it; the body is OAuth's, not the API's (`oauthErrorResponse`).
 */
export class OAuthError extends ApiError {
  constructor(
    status: number,
    readonly error: string,
    description: string,
    headers?: Record<string, string>,
  ) {
    super(status, error.toUpperCase(), description, undefined, headers);
  }
}

export const oauthError = (status: number, error: string, description: string, headers?: Record<string, string>) =>
  new OAuthError(status, error, description, headers);

export function oauthErrorResponse(error: OAuthError): Response {
  return Response.json(
    { error: error.error, error_description: error.message },
    { status: error.status, headers: { "cache-control": "no-store", ...error.headers } },
  );
}

/** S256 PKCE (RFC 7636 §4.2): base64url(SHA-256(verifier)). */
export async function s256(verifier: string): Promise<string> {
  return base64urlOfBytes(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

export { sameSecret };
