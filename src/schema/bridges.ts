/**
 * Wire shapes of the bridge surface (bridges, logins, login sessions; wire-compat §6), webhooks and uploads, for
 * the served OpenAPI document. The services build these objects; the scenario suite checks each answer against them.
 */
import * as v from "valibot";
import { Account, User } from "./wire.ts";

const text = v.optional(v.string());

export const Bridge = v.strictObject({
  id: v.string(),
  type: v.string(),
  provider: v.literal("local"),
  displayName: v.string(),
  network: v.string(),
  status: v.picklist(["available", "connected", "limit_reached"]),
  statusText: v.string(),
  supportsMultipleAccounts: v.boolean(),
  activeAccountCount: v.number(),
  accounts: v.array(Account),
});

export const BridgeCapabilities = v.pipe(v.record(v.string(), v.unknown()), v.description("The bridge's ProvisioningCapabilities document."));

export const LoginFlow = v.strictObject({ id: v.string(), name: v.string(), description: text });

export const Login = v.strictObject({
  bridgeID: v.string(),
  loginID: v.string(),
  status: v.picklist(["connected", "connecting", "needs_login", "logged_out", "unknown"]),
  statusText: text,
  removeScopes: v.array(v.picklist(["current-device", "all-devices"])),
  accountIDs: v.array(v.string()),
  user: User,
});

const InputField = v.strictObject({
  id: v.string(),
  label: text,
  type: v.optional(v.picklist(["text", "password", "email", "tel", "2fa_code", "username"])),
  placeholder: text,
  initialValue: text,
  optional: v.optional(v.boolean()),
});

export const LoginStep = v.variant("type", [
  v.strictObject({ type: v.literal("user_input"), stepID: v.string(), instructions: text, fields: v.array(InputField) }),
  v.strictObject({
    type: v.literal("cookies"),
    stepID: v.string(),
    instructions: text,
    url: v.string(),
    fields: v.array(v.strictObject({ id: v.string(), name: v.string(), type: v.picklist(["cookie", "header", "local_storage"]) })),
    expectedFinalURLRegex: text,
    userAgent: text,
    extractJS: text,
  }),
  v.strictObject({
    type: v.literal("display_and_wait"),
    stepID: v.string(),
    instructions: text,
    display: v.variant("type", [
      v.strictObject({ type: v.literal("qr"), data: v.string() }),
      v.strictObject({ type: v.literal("emoji"), imageURL: v.string() }),
      v.strictObject({ type: v.literal("code"), data: v.string() }),
      v.strictObject({ type: v.literal("nothing") }),
    ]),
  }),
]);

export const LoginSession = v.strictObject({
  bridgeID: v.string(),
  loginSessionID: v.string(),
  status: v.picklist(["waiting_for_input", "waiting_for_cookies", "waiting_for_display", "complete", "cancelled", "failed"]),
  currentStep: v.optional(v.pipe(LoginStep, v.description("The step to answer, while the session waits."))),
  error: v.optional(v.strictObject({ code: v.string(), message: v.string(), details: v.optional(v.record(v.string(), v.unknown())) })),
  loginID: text,
  accountID: text,
  account: v.optional(Account),
  login: v.optional(Login),
});

export const CancelledSession = v.strictObject({ bridgeID: v.string(), loginSessionID: v.string(), status: LoginSession.entries.status });

export const RemovedLogin = v.strictObject({
  bridgeID: v.string(),
  loginID: v.string(),
  scope: v.picklist(["current-device", "all-devices"]),
  removedAccountIDs: v.array(v.string()),
  success: v.literal(true),
});

const Failure = v.strictObject({ deliveryID: v.string(), at: v.string(), message: v.string(), type: v.string() });

export const Webhook = v.strictObject({
  id: v.string(),
  url: v.string(),
  chatIDs: v.pipe(v.array(v.string()), v.description('Chats whose events are delivered; ["*"] is every chat.')),
  createdAt: v.string(),
  pending: v.number(),
  delivered: v.number(),
  failed: v.number(),
  lastSuccessAt: text,
  lastError: v.optional(v.strictObject({ at: v.string(), deliveryID: v.string(), message: v.string(), attempts: v.number() })),
  failures: v.array(Failure),
});

export const CreatedWebhook = v.strictObject({
  ...Webhook.entries,
  secret: v.pipe(v.string(), v.description("The HMAC-SHA256 signing key, shown only in this answer.")),
});

export const Upload = v.strictObject({
  uploadID: v.string(),
  srcURL: v.string(),
  fileName: v.string(),
  mimeType: v.string(),
  fileSize: v.number(),
  width: v.optional(v.number()),
  height: v.optional(v.number()),
  duration: v.optional(v.number()),
});
