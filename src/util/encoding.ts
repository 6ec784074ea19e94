/** Encodings and secrets shared by tokens, cursors, webhooks, OAuth and connectors (WebCrypto only: both runtimes). */

export function base64urlOfBytes(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function base64url(text: string): string {
  return base64urlOfBytes(new TextEncoder().encode(text));
}

export function fromBase64url(text: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw new Error("not base64url");
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

/**
 * A random secret: 32 bytes, base64url, after a prefix that says what it is (`inbx_…`, `code_…`) and, where the
 * deployment holds many inboxes, the inbox it belongs to (`inbx_alice.…`, src/tenancy.ts).
 */
export function randomSecret(prefix: string, inbox?: string): string {
  return `${prefix}_${inbox ? `${inbox}.` : ""}${base64urlOfBytes(crypto.getRandomValues(new Uint8Array(32)))}`;
}

export function randomHex(bytes: number): string {
  return [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function hmacHex(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signature = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(data));
  return [...new Uint8Array(signature)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Compares secrets without leaking where they differ. */
export function sameSecret(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
