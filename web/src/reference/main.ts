/**
 * The API reference at /docs: Swagger UI over this server's own OpenAPI document. It holds no sign-in of its own:
 * the document (GET /v1/spec asks for a token) and every "Try it out" request go with the web inbox's session,
 * through the same token handling as the inbox (api.ts, auth.ts: renewed before it expires, retried once on a 401).
 */
import SwaggerUI from "swagger-ui-dist/swagger-ui-es-bundle.js";
import "swagger-ui-dist/swagger-ui.css";
import "./reference.css";
import { authorizedFetch } from "../api.ts";
import { loadCredentials } from "../auth.ts";

const status = document.getElementById("session")!;

function say(signedIn: boolean, ...parts: (string | Node)[]) {
  status.className = signedIn ? "signed-in" : "signed-out";
  status.replaceChildren(...parts);
}

const inboxLink = (text: string) => Object.assign(document.createElement("a"), { href: "/", textContent: text });

/** No session (never signed in, or its refresh token was refused): how to get one. */
const saySignedOut = (before: string) =>
  say(false, `${before} `, inboxLink("Sign in on the web inbox"), ", then come back to /docs.");

/**
 * "Try it out" requests to this server carry the session's token, unless the person gave one in Swagger UI's own
 * Authorize dialog; nothing of the session goes to any other address.
 */
async function sessionFetch(url: string, init: RequestInit): Promise<Response> {
  const headers = new Headers(init.headers);
  if (headers.has("authorization") || new URL(url, location.href).origin !== location.origin) return fetch(url, init);
  const response = await authorizedFetch(url, init);
  if (response.status === 401 && !loadCredentials())
    saySignedOut("Your session has ended: requests now go without a token, and the API answers 401.");
  return response;
}

async function start() {
  const answer = await authorizedFetch("/v1/spec");
  if (answer.status === 401)
    return saySignedOut(
      "You are not signed in. The reference reads the API's document (GET /v1/spec) and sends “Try it out” requests with the web inbox's session.",
    );
  if (!answer.ok) return say(false, `The API's document (/v1/spec) could not be read: ${answer.status}.`);
  const spec = (await answer.json()) as object;
  say(true, "“Try it out” sends requests as the web inbox's session in this browser (", inboxLink("the inbox"), ").");
  SwaggerUI({
    domNode: document.getElementById("reference")!,
    spec,
    deepLinking: true,
    // The document is this server's: no online validator badge, and no other document named in the address.
    validatorUrl: null,
    queryConfigEnabled: false,
    displayRequestDuration: true,
    requestInterceptor: (request) => Object.assign(request, { userFetch: sessionFetch }),
  });
}

start().catch((failure) => say(false, `The reference could not start: ${String(failure)}`));
