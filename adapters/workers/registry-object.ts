import { DurableObject } from "cloudflare:workers";
import type { DurableObjectNamespace } from "@cloudflare/workers-types/index.ts";
import * as v from "valibot";
import { ApiError, badRequest, notFound } from "../../src/errors.ts";
import { toErrorResponse } from "../../src/http/errors.ts";
import { RateLimiter } from "../../src/http/rate-limit.ts";
import { SIGN_IN_TTL_MS } from "../../src/oauth/index.ts";
import { hashToken } from "../../src/services/tokens.ts";
import { DEVICE_INBOX, INBOX_ID_PATTERN, type InboxLimits } from "../../src/tenancy.ts";
import { randomHex, randomSecret, sameSecret } from "../../src/util/encoding.ts";
import type { InboxControl, InboxRecord, InboxUsage } from "./inbox-control.ts";

export interface RegistryEnv {
  INBOX: DurableObjectNamespace;
  /** A secret: what the operator's requests to /admin/v1 carry as their bearer token. */
  INBOXD_OPERATOR_TOKEN?: string;
  /** JSON InboxLimits given to an inbox created without its own (e.g. `{"maxAccounts":5}`). */
  INBOXD_INBOX_LIMITS?: string;
}

/** 0 allows no account and no stored byte more; requestsPerSecond 0 turns the rate limiter off for the inbox. */
const Limits = v.strictObject({
  maxAccounts: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000))),
  // Cloudflare's own limit on one object's storage is 10 GB.
  maxStorageBytes: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0), v.maxValue(1e12))),
  requestsPerSecond: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(100_000))),
});
const Name = v.pipe(v.string(), v.trim(), v.maxLength(200));
const Count = (max: number) => v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(max));
const CreateBody = v.strictObject({
  id: v.optional(v.pipe(v.string(), v.regex(INBOX_ID_PATTERN, "1–32 lower-case letters, digits or inner hyphens"))),
  name: v.optional(Name),
  limits: v.optional(Limits),
  /** A sandbox dataset to start with (demo and test inboxes), as INBOXD_SEED gives a single device. */
  seed: v.optional(
    v.strictObject({
      chats: Count(10_000),
      messages: Count(1_000_000),
      accounts: v.optional(Count(10)),
      seed: v.optional(v.pipe(v.number(), v.integer())),
    }),
  ),
});
const UpdateBody = v.strictObject({
  name: v.optional(Name),
  status: v.optional(v.picklist(["active", "suspended"])),
  limits: v.optional(Limits),
});

/** `GET /admin/v1/inboxes`: a page of inboxes in ID order, after the ID `after` (the last page's `nextAfter`). */
const ListQuery = v.strictObject({
  limit: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{1,4}$/, "a whole number from 1 to 1000"),
      v.transform(Number),
      v.minValue(1, "a whole number from 1 to 1000"),
      v.maxValue(1000, "a whole number from 1 to 1000"),
    ),
    "100",
  ),
  after: v.optional(v.pipe(v.string(), v.regex(INBOX_ID_PATTERN, "an inbox ID (the last page's nextAfter)"))),
});

const PREFIX = "inbox:";
const BASE = "/admin/v1/inboxes";

/**
 * The operator's side of a deployment of many inboxes (INBOXD_TENANCY=multi): the one object named "registry"
 * keeps the list of inboxes and answers the admin API under /admin/v1/inboxes, behind INBOXD_OPERATOR_TOKEN. It
 * is never on a person's path: the Worker routes their requests by credential straight to their inbox's object
 * (src/tenancy.ts), so this object is touched only by the operator and by the inboxes it creates or changes.
 */
export class RegistryObject extends DurableObject<RegistryEnv> {
  /** Failed operator authentication, per client address (the same throttle as the API's). */
  private readonly failures = new RateLimiter({ perSecond: 1, burst: 1, failedAuthPerMinute: 10, maxKeys: 10_000 });

  async fetch(request: Request): Promise<Response> {
    try {
      await this.authenticate(request);
      // Changes one at a time: each reads a record, asks the inbox's object, then writes the record, and two
      // interleaved (a retried PATCH beside a suspension) would leave the registry and the object disagreeing.
      const answer = request.method === "GET" ? this.route(request) : this.serial(() => this.route(request));
      return Response.json(await answer, { headers: { "cache-control": "no-store" } });
    } catch (error) {
      // Every answer may hold a secret (a sign-in link, a relay's pairing secret): none is stored along the way.
      if (error instanceof Answer)
        return Response.json(error.body, { status: error.status, headers: { "cache-control": "no-store" } });
      const response = toErrorResponse(error);
      response.headers.set("cache-control", "no-store");
      if (response.status === 401) response.headers.set("www-authenticate", 'Bearer realm="inboxd admin"');
      return response;
    }
  }

  private queue: Promise<unknown> = Promise.resolve();

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Called by the single-device deployment's inbox when it first serves a request in a deployment of many. */
  async adopt(): Promise<InboxRecord> {
    const found = await this.ctx.storage.get<InboxRecord>(PREFIX + DEVICE_INBOX);
    if (found) return found;
    const record: InboxRecord = {
      id: DEVICE_INBOX,
      name: "This deployment's inbox before it held many",
      createdAt: new Date().toISOString(),
      status: "active",
      limits: {},
      adopted: true,
    };
    await this.ctx.storage.put(PREFIX + DEVICE_INBOX, record);
    return record;
  }

  private async authenticate(request: Request) {
    const expected = this.env.INBOXD_OPERATOR_TOKEN;
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.get("authorization") ?? "")?.[1] ?? "";
    const address = request.headers.get("cf-connecting-ip") ?? undefined;
    this.failures.checkAddress(address);
    // Compared as hashes, so the comparison's time says nothing of the secret's length.
    if (expected && given && sameSecret(await hashToken(given), await hashToken(expected))) return;
    this.failures.failed(address);
    throw new ApiError(
      401,
      "UNAUTHORIZED",
      expected
        ? "the admin API needs the operator's token (INBOXD_OPERATOR_TOKEN) as a bearer token"
        : "the admin API is off: set the INBOXD_OPERATOR_TOKEN secret (wrangler secret put INBOXD_OPERATOR_TOKEN)",
    );
  }

  private async route(request: Request): Promise<unknown> {
    const url = new URL(request.url);
    const method = request.method;
    const match = /^\/admin\/v1\/inboxes(?:\/([a-z0-9-]+)(?:\/(sign-in-links|relay))?)?\/?$/.exec(url.pathname);
    if (!match)
      throw new ApiError(
        404,
        "NOT_FOUND",
        `no route for ${method} ${url.pathname}: the admin API is ${BASE}, ${BASE}/{id}, ${BASE}/{id}/sign-in-links and ${BASE}/{id}/relay`,
      );
    const [, id, sub] = match;
    if (id === undefined) {
      if (method === "GET") return this.list(query(url, ListQuery));
      if (method === "POST") throw new Answer(201, await this.create(url, await body(request, CreateBody)));
    } else if (sub === "sign-in-links") {
      if (method === "POST") {
        const record = await this.require(id);
        if (record.status === "suspended")
          throw new ApiError(409, "CONFLICT", `inbox ${id} is suspended: resume it first (PATCH status "active")`);
        throw new Answer(201, await this.signInLink(url, record));
      }
    } else if (sub === "relay") {
      if (method === "POST") throw new Answer(201, await this.pairRelay(await this.require(id)));
      if (method === "DELETE") return this.update(await this.require(id), {}, { relay: undefined });
    } else {
      if (method === "GET") return this.show(await this.require(id));
      if (method === "PATCH") return this.update(await this.require(id), await body(request, UpdateBody));
      if (method === "DELETE") return this.remove(await this.require(id));
    }
    throw new ApiError(405, "METHOD_NOT_ALLOWED", `${method} is not answered at ${url.pathname}`);
  }

  /** One page: a deployment of 10,000 inboxes is not read, nor answered, in one piece. */
  private async list({ limit, after }: v.InferOutput<typeof ListQuery>) {
    const found = await this.ctx.storage.list<InboxRecord>({
      prefix: PREFIX,
      ...(after === undefined ? {} : { startAfter: PREFIX + after }),
      limit: limit + 1,
    });
    const items = [...found.values()].slice(0, limit).map(present);
    const hasMore = found.size > limit;
    return { items, hasMore, ...(hasMore ? { nextAfter: items[items.length - 1].id } : {}) };
  }

  private async require(id: string): Promise<InboxRecord> {
    // The route's pattern takes only letters, digits and hyphens, so there is nothing to decode.
    const record = await this.ctx.storage.get<InboxRecord>(PREFIX + id);
    if (!record) throw notFound(`inbox ${id}`);
    return record;
  }

  private inbox(id: string): InboxControl {
    return this.env.INBOX.get(this.env.INBOX.idFromName(id)) as unknown as InboxControl;
  }

  private async create(url: URL, input: v.InferOutput<typeof CreateBody>) {
    const id = input.id ?? randomHex(6);
    if (await this.ctx.storage.get(PREFIX + id))
      throw new ApiError(409, "CONFLICT", `an inbox ${id} exists already`, undefined, { "x-should-retry": "false" });
    if (id === DEVICE_INBOX)
      throw badRequest(`"${DEVICE_INBOX}" is the single-device deployment's inbox; choose another ID`, [
        { code: "invalid_value", message: "reserved", path: ["body", "id"] },
      ]);
    const record: InboxRecord = {
      id,
      ...(input.name ? { name: input.name } : {}),
      createdAt: new Date().toISOString(),
      status: "active",
      limits: input.limits ?? defaultLimits(this.env),
    };
    // The record first: should the object fail (a seed past its CPU limit), the inbox is listed, and DELETE or a
    // PATCH reaches it. An object that holds the record already (from such a failure) is brought in line.
    await this.ctx.storage.put(PREFIX + id, record);
    try {
      if (!(await this.inbox(id).tenancyCreate(record, input.seed))) await this.inbox(id).tenancyUpdate(record);
    } catch (error) {
      throw new ApiError(
        502,
        "INBOX_NOT_READY",
        `inbox ${id} is listed, but its object failed to start (${error instanceof Error ? error.message : String(error)}): delete it and create it again`,
      );
    }
    return { ...present(record), signIn: await this.signInLink(url, record) };
  }

  private async signInLink(url: URL, record: InboxRecord) {
    const code = await this.inbox(record.id).tenancySignInCode(SIGN_IN_TTL_MS);
    return {
      url: `${url.origin}/oauth/login?code=${encodeURIComponent(code)}`,
      expiresAt: new Date(Date.now() + SIGN_IN_TTL_MS).toISOString(),
    };
  }

  private async show(record: InboxRecord) {
    return { ...present(record), usage: (await this.inbox(record.id).tenancyUsage()) satisfies InboxUsage };
  }

  private async update(
    record: InboxRecord,
    input: v.InferOutput<typeof UpdateBody>,
    relay: Pick<InboxRecord, "relay"> | Record<never, never> = {},
  ) {
    const next: InboxRecord = {
      ...record,
      ...(input.name ? { name: input.name } : {}),
      ...(input.status ? { status: input.status } : {}),
      ...(input.limits ? { limits: input.limits } : {}),
      ...relay,
    };
    if ("relay" in relay && relay.relay === undefined) delete next.relay;
    // An empty name removes it.
    if (input.name === "") delete next.name;
    await this.inbox(record.id).tenancyUpdate(next);
    await this.ctx.storage.put(PREFIX + record.id, next);
    return present(next);
  }

  /**
   * Makes the inbox a relay to the person's daemon (`inboxd serve --relay <this Worker>` with the secret answered
   * here as INBOXD_RELAY_SECRET): a new secret each time, replacing the last; DELETE …/relay ends it.
   */
  private async pairRelay(record: InboxRecord) {
    const secret = randomSecret("relay", record.id);
    const next = await this.update(
      record,
      {},
      {
        relay: { secretHash: await hashToken(secret), since: new Date().toISOString() },
      },
    );
    return { ...next, relaySecret: secret };
  }

  private async remove(record: InboxRecord) {
    const deleted = await this.inbox(record.id).tenancyDelete();
    await this.ctx.storage.delete(PREFIX + record.id);
    return { id: record.id, deleted: true, ...deleted };
  }
}

/** A record as the operator sees it: a relay's secret hash stays inside. */
function present({ relay, ...record }: InboxRecord) {
  return { ...record, ...(relay ? { relay: { since: relay.since } } : {}) };
}

/** A success with a status other than 200 (created), thrown past the JSON answer of `fetch`. */
class Answer {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/** The URL's query, checked like a body: an unknown parameter or a bad value is a 400 naming it. */
function query<T extends v.GenericSchema>(url: URL, schema: T): v.InferOutput<T> {
  for (const name of new Set(url.searchParams.keys()))
    if (url.searchParams.getAll(name).length > 1)
      throw badRequest(`query.${name}: given more than once`, [
        { code: "invalid_value", message: "given more than once", path: ["query", name] },
      ]);
  return checked(Object.fromEntries(url.searchParams), schema, "query");
}

async function body<T extends v.GenericSchema>(request: Request, schema: T): Promise<v.InferOutput<T>> {
  let json: unknown;
  try {
    const text = await request.text();
    json = text ? JSON.parse(text) : {};
  } catch {
    throw badRequest("the body must be JSON", [{ code: "invalid_json", message: "not JSON", path: ["body"] }]);
  }
  return checked(json, schema, "body");
}

function checked<T extends v.GenericSchema>(input: unknown, schema: T, where: "body" | "query"): v.InferOutput<T> {
  const parsed = v.safeParse(schema, input);
  if (!parsed.success)
    throw badRequest(
      parsed.issues
        .map((i) => `${[where, ...(i.path ?? []).map((p) => String(p.key))].join(".")}: ${i.message}`)
        .join("; "),
      parsed.issues.map((i) => ({
        code: "invalid_value",
        message: i.message,
        path: [where, ...(i.path ?? []).map((p) => String(p.key))],
      })),
    );
  return parsed.output;
}

function defaultLimits(env: RegistryEnv): InboxLimits {
  if (!env.INBOXD_INBOX_LIMITS) return {};
  const parsed = v.safeParse(Limits, JSON.parse(env.INBOXD_INBOX_LIMITS));
  if (!parsed.success) throw new Error(`INBOXD_INBOX_LIMITS: ${parsed.issues.map((i) => i.message).join("; ")}`);
  return parsed.output;
}
