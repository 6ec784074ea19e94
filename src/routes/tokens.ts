import * as v from "valibot";
import type { Storage } from "unstorage";
import { badRequest, notFound } from "../errors.ts";
import type { Api } from "../http/route-kit.ts";
import { OAuthStore } from "../oauth/store.ts";
import { Success } from "../schema/wire.ts";
import { listTokens, removeTokenByID, type Scope, tokenExists } from "../services/tokens.ts";
import type { TokenRecord } from "../store/records.ts";

const Scopes = v.array(v.picklist(["read", "write"]));
const iso = (what: string) => v.pipe(v.string(), v.description(`${what} (ISO 8601).`));

export const TokenInfo = v.strictObject({
  id: v.pipe(
    v.string(),
    v.description("The token's SHA-256, in hex: what `DELETE /v1/tokens/{tokenID}` takes. Never the token itself."),
  ),
  name: v.pipe(
    v.string(),
    v.description("`--name` of `inboxd token create`, or the app's name for a token an OAuth app was given."),
  ),
  scopes: Scopes,
  createdAt: iso("When the token was made"),
  hint: v.pipe(
    v.string(),
    v.description(
      "The token's first 9 characters (`inbx_` and 4 more; in a deployment of many inboxes `inbx_<inbox>.` and 4 more), to tell tokens apart.",
    ),
  ),
  expiresAt: v.optional(iso("When the token stops working; absent: never")),
  clientID: v.optional(
    v.pipe(
      v.string(),
      v.description("The OAuth app the token was issued to; absent for tokens made with `inboxd token create`."),
    ),
  ),
  clientName: v.optional(v.string()),
  current: v.pipe(v.boolean(), v.description("Whether this is the token this request was made with.")),
});

export const AppInfo = v.strictObject({
  clientID: v.string(),
  clientName: v.string(),
  redirectURIs: v.array(v.string()),
  scopes: v.pipe(Scopes, v.description("What the app's live grants allow, together.")),
  authorizedAt: iso("When the earliest of the app's live grants was given"),
  activeTokens: v.pipe(v.number(), v.description("The app's access tokens that have not expired.")),
  current: v.pipe(v.boolean(), v.description("Whether this request was made with one of the app's tokens.")),
});

const RevokedApp = v.strictObject({
  success: v.literal(true),
  revokedTokens: v.pipe(
    v.number(),
    v.description("How many of the app's access and refresh tokens were still valid and are now revoked."),
  ),
});

/** A token's id as GET /v1/tokens lists it: the SHA-256 of the token, in hex. */
const TOKEN_ID = /^[0-9a-f]{64}$/i;

/** What an OAuth app holds now: its unexpired access tokens and unused refresh tokens. */
interface Holding {
  clientName: string;
  scopes: Set<Scope>;
  since: number;
  accessIDs: string[];
  refreshes: number;
}

const live = (t: TokenRecord, now: number) => t.expiresAt === undefined || t.expiresAt > now;

/**
 * /v1/tokens and /v1/authorized-apps: the owner's settings (the web inbox's), through the public API. Tokens are
 * listed by their stored SHA-256 and a 9-character hint, never the secret; revoking an app ends its refresh tokens
 * with its access tokens. Every operation needs the write scope: a read-only token may not see or end other
 * tokens. Both lists scan the token store and the OAuth records, which is fine for a settings page.
 */
export function tokenRoutes(api: Api, options: { storage: Storage; now: () => number }) {
  const { storage, now } = options;
  const store = new OAuthStore(storage, now);
  const removeToken = (id: string) => removeTokenByID(storage, id);
  const tag = "Tokens";

  /** The OAuth clients with a live grant, by client ID. */
  async function holdings(): Promise<Map<string, Holding>> {
    const at = now();
    const out = new Map<string, Holding>();
    const hold = (clientID: string, clientName: string, scopes: Scope[], since: number) => {
      const h = out.get(clientID) ?? { clientName, scopes: new Set(), since, accessIDs: [], refreshes: 0 };
      for (const s of scopes) h.scopes.add(s);
      h.since = Math.min(h.since, since);
      out.set(clientID, h);
      return h;
    };
    for (const t of await listTokens(storage))
      if (t.clientID && live(t, at))
        hold(t.clientID, t.clientName ?? t.name, t.scopes, Date.parse(t.createdAt)).accessIDs.push(t.id);
    for (const { record } of await store.refreshRecords()) {
      if (record.used) continue;
      const family = await store.family(record.family);
      hold(record.clientID, record.clientName, record.scopes, family?.createdAt ?? record.createdAt).refreshes++;
    }
    return out;
  }

  api
    .add(
      {
        method: "GET",
        path: "/v1/tokens",
        operationId: "listTokens",
        extension: true,
        summary: "List access tokens",
        tag,
        scope: "write",
        response: v.strictObject({ items: v.array(TokenInfo) }),
        description:
          "The tokens that work now, oldest first: those made with `inboxd token create` and those OAuth apps were given. Each is named by its SHA-256 and its first characters; the token itself is never shown again. Needs the write scope.",
      },
      async ({ rc }) => {
        const at = now();
        const items = (await listTokens(storage))
          .filter((t) => live(t, at))
          .map((t) => ({
            id: t.id,
            name: t.name,
            scopes: t.scopes,
            createdAt: t.createdAt,
            hint: t.hint,
            ...(t.expiresAt !== undefined ? { expiresAt: new Date(t.expiresAt).toISOString() } : {}),
            ...(t.clientID ? { clientID: t.clientID, ...(t.clientName ? { clientName: t.clientName } : {}) } : {}),
            current: t.id === rc.principal?.id,
          }));
        return { items };
      },
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/tokens/:tokenID",
        operationId: "revokeToken",
        extension: true,
        summary: "Revoke an access token",
        tag,
        response: Success,
        description:
          "Revokes the token with this id (the whole id from `GET /v1/tokens`). The token this request is made with may be revoked too. Requests with a revoked token are refused (401) from at most a second later (verified tokens are remembered for a second).",
      },
      async ({ params: { tokenID } }) => {
        if (!TOKEN_ID.test(tokenID))
          throw badRequest(
            "invalid path parameter tokenID: expected a token id, 64 hexadecimal characters (GET /v1/tokens lists them)",
            [{ code: "invalid_format", message: "expected 64 hexadecimal characters", path: ["path", "tokenID"] }],
          );
        const id = tokenID.toLowerCase();
        if (!(await tokenExists(storage, id))) throw notFound(`token ${id}`);
        await removeToken(id);
        return { success: true as const };
      },
    )
    .add(
      {
        method: "GET",
        path: "/v1/authorized-apps",
        operationId: "listAuthorizedApps",
        extension: true,
        summary: "List authorized apps",
        tag,
        scope: "write",
        response: v.strictObject({ items: v.array(AppInfo) }),
        description:
          "The OAuth apps that hold a live grant (a refresh token not used yet, or an access token not expired), earliest authorized first. Needs the write scope.",
      },
      async ({ rc }) => {
        const items = [];
        for (const [clientID, h] of await holdings()) {
          const client = await store.client(clientID);
          items.push({
            clientID,
            clientName: client?.client_name ?? h.clientName,
            redirectURIs: client?.redirect_uris ?? [],
            scopes: (["read", "write"] as const).filter((s) => h.scopes.has(s)),
            authorizedAt: new Date(h.since).toISOString(),
            activeTokens: h.accessIDs.length,
            current: rc.principal?.clientID === clientID,
          });
        }
        return { items: items.sort((a, b) => a.authorizedAt.localeCompare(b.authorizedAt)) };
      },
    )
    .add(
      {
        method: "DELETE",
        path: "/v1/authorized-apps/:clientID",
        operationId: "revokeAuthorizedApp",
        extension: true,
        summary: "Revoke an app's access",
        tag,
        response: RevokedApp,
        description:
          "Ends every grant of the app: its access tokens and its refresh tokens, so within a second it can no longer call the API, and it cannot refresh. The app stays registered and may ask for consent again. 404 when the app holds no live grant.",
      },
      async ({ params: { clientID } }) => {
        let held = (await holdings()).get(clientID);
        if (!held) throw notFound(`authorized app ${clientID}`);
        let revokedTokens = 0;
        // Again while anything is left (a refresh that ran during the revocation issued new tokens), a few times at most.
        for (let pass = 0; held && pass < 3; pass++) {
          revokedTokens += held.accessIDs.length + held.refreshes;
          await store.revokeClient(clientID, removeToken);
          for (const t of await listTokens(storage)) if (t.clientID === clientID) await removeToken(t.id);
          held = (await holdings()).get(clientID);
        }
        return { success: true as const, revokedTokens };
      },
    );
}
