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

export const BridgeCapabilities = v.pipe(
  v.record(v.string(), v.unknown()),
  v.description("The bridge's ProvisioningCapabilities document."),
);

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

/**
 * The name the newer official clients give a login (…/connections): the same object under its own component, so
 * the document shows what they look for. A distinct schema object, since components are found by identity.
 */
export const BridgeConnection = v.pipe(
  v.strictObject({ ...Login.entries }),
  v.description("A bridge login, as /connections names it: the same shape as Login."),
);

const InputField = v.strictObject({
  id: v.string(),
  label: text,
  type: v.optional(v.picklist(["text", "password", "email", "tel", "2fa_code", "username"])),
  placeholder: text,
  initialValue: text,
  optional: v.optional(v.boolean()),
});

const headers = v.pipe(v.record(v.string(), v.array(v.string())), v.description("Header name → every value it has."));

/** bridgev2's client_http request (its `request_id` is the step's `stepID`). */
export const ClientHTTPRequest = v.strictObject({
  method: v.string(),
  url: v.string(),
  headers: v.optional(headers),
  body: v.optional(v.pipe(v.string(), v.description("base64"))),
});

export const LoginStep = v.variant("type", [
  v.strictObject({
    type: v.literal("user_input"),
    stepID: v.string(),
    instructions: text,
    fields: v.array(InputField),
  }),
  v.strictObject({
    type: v.literal("cookies"),
    stepID: v.string(),
    instructions: text,
    url: v.string(),
    fields: v.array(
      v.strictObject({ id: v.string(), name: v.string(), type: v.picklist(["cookie", "header", "local_storage"]) }),
    ),
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
  v.pipe(
    v.strictObject({
      type: v.literal("client_http"),
      stepID: v.string(),
      instructions: text,
      request: ClientHTTPRequest,
    }),
    v.description("Make this HTTP request from the client's own device and submit what it got (`response`)."),
  ),
  v.pipe(
    v.strictObject({
      type: v.literal("webauthn"),
      stepID: v.string(),
      instructions: text,
      url: v.optional(v.pipe(v.string(), v.description("The origin the passkey belongs to."))),
      publicKey: v.optional(
        v.pipe(
          v.record(v.string(), v.unknown()),
          v.description("PublicKeyCredentialRequestOptions JSON for navigator.credentials.get()."),
        ),
      ),
    }),
    v.description("Sign in with a passkey and submit the credential's JSON (`credential`)."),
  ),
]);

export const LoginSession = v.strictObject({
  bridgeID: v.string(),
  loginSessionID: v.string(),
  status: v.picklist([
    "waiting_for_input",
    "waiting_for_cookies",
    "waiting_for_display",
    "complete",
    "cancelled",
    "failed",
  ]),
  currentStep: v.optional(v.pipe(LoginStep, v.description("The step to answer, while the session waits."))),
  error: v.optional(
    v.strictObject({ code: v.string(), message: v.string(), details: v.optional(v.record(v.string(), v.unknown())) }),
  ),
  loginID: text,
  accountID: text,
  account: v.optional(Account),
  login: v.optional(Login),
  connection: v.optional(BridgeConnection),
});

export const CancelledSession = v.strictObject({
  bridgeID: v.string(),
  loginSessionID: v.string(),
  status: LoginSession.entries.status,
});

/** What both generations of clients read after a removal: `success` and `removedAccountIDs` (older), `status` and `affectedAccountIDs` (newer). */
export const RemovedLogin = v.strictObject({
  bridgeID: v.string(),
  loginID: v.string(),
  scope: v.picklist(["current-device", "all-devices"]),
  status: v.literal("removed"),
  affectedAccountIDs: v.array(v.string()),
  removedAccountIDs: v.array(v.string()),
  success: v.literal(true),
});

const DeadLetter = v.strictObject({
  deliveryID: v.pipe(
    v.string(),
    v.description('The delivery given up on ("" for events retention dropped before they were delivered).'),
  ),
  eventID: v.pipe(v.number(), v.description("Its event (for a retention gap: the last event dropped).")),
  type: v.string(),
  at: v.string(),
  attempts: v.number(),
  message: v.pipe(v.string(), v.description("The last error.")),
});

export const Webhook = v.strictObject({
  id: v.string(),
  url: v.string(),
  chatIDs: v.pipe(v.array(v.string()), v.description('Chats whose events are delivered; ["*"] is every chat.')),
  createdAt: v.string(),
  cursor: v.pipe(
    v.number(),
    v.description(
      "The last eventID this webhook has dealt with (delivered, given up on, or not for its chats); replay moves it back.",
    ),
  ),
  pending: v.pipe(
    v.number(),
    v.description("Events after the cursor still to deliver (while the webhook is behind, an upper bound)."),
  ),
  delivered: v.number(),
  failed: v.pipe(v.number(), v.description("Deliveries given up on after 10 attempts.")),
  lastSuccessAt: text,
  lastError: v.optional(
    v.strictObject({ at: v.string(), deliveryID: v.string(), message: v.string(), attempts: v.number() }),
  ),
  failures: v.pipe(
    v.array(DeadLetter),
    v.description(
      "The dead-letter list, newest first (at most 100): deliveries given up on, and stretches of events retention dropped before delivery.",
    ),
  ),
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
