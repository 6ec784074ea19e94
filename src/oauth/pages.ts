/**
 * The authorization server's pages: plain server-rendered HTML, no script, no third-party resource. Every page is
 * sent with a CSP that allows only its own inline style (by nonce), forms posted to this server (and, for the
 * consent form, the redirect it leads to), no framing (clickjacking), no referrer to other sites, no caching.
 */
export function page(
  title: string,
  body: string,
  options: { status?: number; formTargets?: string[]; headers?: Record<string, string> } = {},
): Response {
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(12))));
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · inboxd</title>
<style nonce="${nonce}">
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f;background:#fafafa}
h1{font-size:1.4rem}.card{background:#fff;border:1px solid #ddd;border-radius:.6rem;padding:1.2rem 1.4rem}
ul{padding-left:1.2rem}code{background:#eee;padding:.1rem .3rem;border-radius:.2rem}
button{font:inherit;padding:.5rem 1.2rem;border-radius:.4rem;border:1px solid #888;margin-right:.6rem;cursor:pointer}
button.primary{background:#0a58ca;color:#fff;border-color:#0a58ca}input{font:inherit;width:100%;padding:.4rem;box-sizing:border-box}
.muted{color:#555;font-size:.9rem}
</style></head><body><main class="card">
<h1>${escapeHtml(title)}</h1>
${body}
</main></body></html>`;
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(" ");
  return new Response(html, {
    status: options.status ?? 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": `default-src 'none'; style-src 'nonce-${nonce}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the page's own form posts,
      // which the cross-site check refuses; other sites (the app's redirect) still get no referrer.
      "referrer-policy": "same-origin",
      "cache-control": "no-store",
      ...options.headers,
    },
  });
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

export const hidden = (fields: Record<string, string | undefined>) =>
  Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value!)}">`)
    .join("\n");

/** An error shown to the person instead of a redirect (the redirect target itself is not trusted). */
export const errorPage = (message: string, status = 400) =>
  page("Cannot continue", `<p>${escapeHtml(message)}</p>`, { status });
