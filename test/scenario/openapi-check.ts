/**
 * Checks answers against the server's own OpenAPI document (GET /v1/spec): every JSON answer the scenario suite
 * receives, through raw HTTP or the SDKs, must match the schema its operation documents for that status, or the
 * test that made the request fails. So the document and the behaviour cannot drift apart.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { isV0Path } from "../../src/v0/index.ts";

type Json = Record<string, any>;

interface Route {
  method: string;
  pattern: RegExp;
  /** Literal segments sort first: /v1/chats/search before /v1/chats/{chatID}. */
  params: number;
  operation: Json;
}

export class ResponseChecker {
  private readonly routes: Route[];
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false });
  private readonly compiled = new Map<Json, ValidateFunction>();
  /** How many answers were checked, by operation (so a suite can see that checking happened). */
  readonly checked = new Map<string, number>();

  constructor(private readonly document: Json) {
    addFormats.default(this.ajv);
    this.routes = Object.entries(document.paths as Json)
      .flatMap(([path, item]) =>
        Object.entries(item as Json).map(([method, operation]) => ({
          method: method.toUpperCase(),
          pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{\w+\\?\}/g, "[^/]+")}$`),
          params: (path.match(/\{/g) ?? []).length,
          operation: operation as Json,
        })),
      )
      .sort((a, b) => a.params - b.params);
  }

  /** Whether the document has the operation that answers this method and URL. */
  documents(method: string, url: string): boolean {
    const { pathname } = new URL(url);
    return this.routes.some((r) => r.method === method && r.pattern.test(pathname));
  }

  /** Throws when a JSON answer does not match its documented schema; other answers pass untouched. */
  check(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
    if (!/^application\/json\b/i.test(contentType ?? "") || method === "HEAD") return;
    const { pathname } = new URL(url);
    const route = this.routes.find((r) => r.method === method && r.pattern.test(pathname));
    const label = `${method} ${pathname} → ${status}`;
    // An unknown route answers the error body of its generation.
    const response = route
      ? this.responseFor(route.operation, status)
      : { $ref: `#/components/responses/${isV0Path(pathname) ? "V0Error" : "Error"}` };
    if (!response) throw new Error(`${label}: status ${status} is not documented for ${route!.operation.operationId}`);
    const schema = this.resolveResponse(response)?.content?.["application/json"]?.schema;
    if (!schema) return; // documented as JSON without a schema (the OpenAPI document itself)
    const validate = this.validator(schema);
    if (!validate(body)) {
      const errors = (validate.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || "/"} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ""}`);
      throw new Error(
        `${label}: the answer does not match the OpenAPI document (${route?.operation.operationId ?? "error body"}):\n  ${errors.join("\n  ")}\n  body: ${JSON.stringify(body).slice(0, 400)}`,
      );
    }
    const key = route?.operation.operationId ?? "unrouted";
    this.checked.set(key, (this.checked.get(key) ?? 0) + 1);
  }

  private responseFor(operation: Json, status: number): Json | undefined {
    const responses = operation.responses as Json;
    return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  }

  private resolveResponse(response: Json): Json {
    const name = response.$ref?.split("/").pop();
    return name ? this.document.components.responses[name] : response;
  }

  private validator(schema: Json): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (!validate) {
      // The schema's `#/components/...` references resolve against the document's components, carried along.
      validate = this.ajv.compile({ ...schema, components: { schemas: this.document.components.schemas } });
      this.compiled.set(schema, validate);
    }
    return validate;
  }
}

/** Wraps a fetch so that every JSON answer is checked against the document, once `checker()` has one. */
export function checkingFetch(
  checker: () => ResponseChecker | undefined,
  fetch: typeof globalThis.fetch = globalThis.fetch,
) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    const spec = checker();
    if (spec && /json/i.test(res.headers.get("content-type") ?? "")) {
      const url = input instanceof Request ? input.url : String(input);
      const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
      const text = await res.clone().text();
      spec.check(method, url, res.status, res.headers.get("content-type"), text ? JSON.parse(text) : undefined);
    }
    return res;
  };
}
