/**
 * Every route of the API with the valibot schemas it validates with (exported by src/routes/*.ts): what the fuzzer
 * generates its requests from. `routesInSource` reads the route registrations back out of src/routes and src/app.ts,
 * so a test can check that this table names every route the app has.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type * as v from "valibot";
import * as accounts from "../../src/routes/accounts.ts";
import * as assets from "../../src/routes/assets.ts";
import * as bridges from "../../src/routes/bridges.ts";
import * as chats from "../../src/routes/chats.ts";
import * as messages from "../../src/routes/messages.ts";
import * as appLevel from "../../src/routes/app.ts";
import * as webhooks from "../../src/routes/webhooks.ts";
import { ROOT } from "../harness/process.ts";

export type Schema = v.GenericSchema;
export interface Route {
  method: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Schema;
  body?: Schema;
  /** A multipart upload rather than JSON. */
  multipart?: boolean;
}

export const ROUTES: Route[] = [
  { method: "GET", path: "/v1/info" },
  { method: "GET", path: "/v1/ws" },
  { method: "GET", path: "/v1/accounts" },
  { method: "GET", path: "/v1/accounts/:accountID" },
  { method: "GET", path: "/v1/accounts/:accountID/contacts", query: accounts.ContactsQuery },
  { method: "GET", path: "/v1/accounts/:accountID/contacts/list", query: accounts.ContactListQuery },
  { method: "GET", path: "/v1/chats", query: chats.ListQuery },
  { method: "GET", path: "/v1/chats/search", query: chats.SearchQuery },
  { method: "POST", path: "/v1/chats", body: chats.CreateBody },
  { method: "POST", path: "/v1/chats/start", body: chats.StartBody },
  { method: "GET", path: "/v1/chats/:chatID", query: chats.GetQuery },
  { method: "PATCH", path: "/v1/chats/:chatID", body: chats.PatchBody },
  { method: "POST", path: "/v1/chats/:chatID/archive", body: chats.ArchiveBody },
  { method: "POST", path: "/v1/chats/:chatID/reminders", body: chats.ReminderBody },
  { method: "DELETE", path: "/v1/chats/:chatID/reminders" },
  { method: "POST", path: "/v1/chats/:chatID/read", body: chats.ReadBody },
  { method: "POST", path: "/v1/chats/:chatID/unread", body: chats.ReadBody },
  { method: "POST", path: "/v1/chats/:chatID/notify-anyway" },
  { method: "GET", path: "/v1/messages/search", query: messages.SearchQuery },
  { method: "GET", path: "/v1/search", query: appLevel.SearchQuery },
  { method: "POST", path: "/v1/focus", body: appLevel.FocusBody },
  { method: "GET", path: "/v1/chats/:chatID/messages", query: messages.ListQuery },
  { method: "POST", path: "/v1/chats/:chatID/messages", body: messages.SendBody },
  { method: "GET", path: "/v1/chats/:chatID/messages/:messageID" },
  { method: "PUT", path: "/v1/chats/:chatID/messages/:messageID", body: messages.EditBody },
  { method: "DELETE", path: "/v1/chats/:chatID/messages/:messageID" },
  { method: "POST", path: "/v1/chats/:chatID/messages/:messageID/reactions", body: messages.ReactionBody },
  { method: "DELETE", path: "/v1/chats/:chatID/messages/:messageID/reactions", query: messages.ReactionQuery },
  { method: "DELETE", path: "/v1/chats/:chatID/messages/:messageID/reactions/:reactionKey" },
  { method: "GET", path: "/v1/bridges" },
  { method: "GET", path: "/v1/bridges/:bridgeID" },
  { method: "GET", path: "/v1/bridges/:bridgeID/capabilities" },
  { method: "GET", path: "/v1/bridges/:bridgeID/login-flows" },
  { method: "POST", path: "/v1/bridges/:bridgeID/login-sessions", body: bridges.SessionBody },
  { method: "GET", path: "/v1/bridges/:bridgeID/login-sessions/:sessionID" },
  { method: "DELETE", path: "/v1/bridges/:bridgeID/login-sessions/:sessionID" },
  { method: "POST", path: "/v1/bridges/:bridgeID/login-sessions/:sessionID/steps/:stepID", body: bridges.StepBody },
  { method: "GET", path: "/v1/bridges/:bridgeID/logins" },
  { method: "GET", path: "/v1/bridges/:bridgeID/logins/:loginID" },
  { method: "POST", path: "/v1/bridges/:bridgeID/logins/:loginID/remove", body: bridges.RemoveBody },
  { method: "POST", path: "/v1/webhooks", body: webhooks.CreateBody },
  { method: "GET", path: "/v1/webhooks" },
  { method: "GET", path: "/v1/webhooks/:id" },
  { method: "DELETE", path: "/v1/webhooks/:id" },
  { method: "POST", path: "/v1/assets/upload", multipart: true },
  { method: "POST", path: "/v1/assets/upload/base64", body: assets.Base64Body },
  { method: "POST", path: "/v1/assets/download", body: assets.UrlBody },
  { method: "GET", path: "/v1/assets/serve", query: assets.ServeQuery },
  { method: "HEAD", path: "/v1/assets/serve", query: assets.ServeQuery },
];

/** "METHOD /path" for every `.get("/v1/…"` (and friends) registered in src/routes and src/app.ts. */
export function routesInSource(): string[] {
  const files = [...readdirSync(join(ROOT, "src/routes")).filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts")).map((f) => join(ROOT, "src/routes", f)), join(ROOT, "src/app.ts")];
  const found: string[] = [];
  for (const file of files) {
    for (const match of readFileSync(file, "utf8").matchAll(/\.(get|head|post|put|patch|delete)\(\s*"(\/v1\/[^"]*)"/g)) found.push(`${match[1].toUpperCase()} ${match[2]}`);
  }
  return found.sort();
}
