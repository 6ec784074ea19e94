/**
 * The API's own OpenAPI 3.1 document, built from the operations the app registered (src/http/route-kit.ts `Api`):
 * their paths, the valibot schemas they validate input with, and the wire schemas of what they answer. Nothing here
 * is written by hand per route, so the document cannot drift from the routes; the scenario suite checks every
 * answer it receives against it (test/scenario/openapi-check.ts), so it cannot drift from the behaviour either.
 */
import type * as v from "valibot";
import type { Operation, ResponseDoc } from "../http/route-kit.ts";
import { Account, Attachment, Chat, ErrorBody, Message, Reaction, User } from "../schema/wire.ts";
import { Bridge, BridgeConnection, Login, LoginSession, LoginStep, Upload, Webhook } from "../schema/bridges.ts";
import { jsonSchemaOf, type JsonSchema } from "./json-schema.ts";

/** Schemas that become named components (referenced wherever an operation uses the same schema object). */
const COMPONENTS: Record<string, v.GenericSchema> = {
  User,
  Account,
  Attachment,
  Reaction,
  Message,
  Chat,
  Bridge,
  Login,
  BridgeConnection,
  LoginStep,
  LoginSession,
  Webhook,
  Upload,
  Error: ErrorBody,
};

export interface DocumentOptions {
  version: string;
  /** Error body schemas other than /v1's, by the component name they get (the /v0 generation's). */
  errorBodies?: Record<string, v.GenericSchema>;
  /** More named components (an area's own shapes, e.g. the /v0 Chat). */
  components?: Record<string, v.GenericSchema>;
}

export type OpenApiDocument = {
  openapi: "3.1.0";
  info: Record<string, unknown>;
  paths: Record<string, Record<string, OperationObject>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, unknown>;
    securitySchemes: Record<string, unknown>;
  };
  [key: string]: unknown;
};
type OperationObject = Record<string, unknown> & { responses: Record<string, unknown> };

const ref = (name: string) => `#/components/schemas/${name}`;

/** `/v1/chats/:chatID` → `/v1/chats/{chatID}`. */
export const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

export function openApiDocument(operations: readonly Operation[], options: DocumentOptions): OpenApiDocument {
  const definitions = { ...COMPONENTS, ...options.components, ...options.errorBodies };
  const convert = (schema: v.GenericSchema, mode: "input" | "output") => {
    const out = jsonSchemaOf(schema, { mode, definitions, ref });
    delete out.$defs;
    return out;
  };
  const schemas: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(definitions)) {
    // A component is converted on its own, its nested components by reference.
    const { [name]: _self, ...others } = definitions;
    const out = jsonSchemaOf(schema, { mode: "output", definitions: others, ref });
    delete out.$defs;
    schemas[name] = out;
  }
  const errorResponse = (name: string) => ({
    description: "An error.",
    content: { "application/json": { schema: { $ref: ref(name) } } },
  });
  const responses: Record<string, unknown> = { Error: errorResponse("Error") };
  for (const name of Object.keys(options.errorBodies ?? {})) responses[name] = errorResponse(name);

  const paths: OpenApiDocument["paths"] = {};
  for (const op of operations) {
    const path = openApiPath(op.path);
    const entry: OperationObject = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: [op.tag],
      ...(op.deprecated ? { deprecated: true } : {}),
      ...(op.extension ? { "x-inboxd-extension": true } : {}),
      ...(op.scope === "public" ? { security: [{}, { bearerAuth: [] }] } : {}),
      ...(op.scope && op.scope !== "public" ? { "x-inboxd-scope": op.scope } : {}),
      parameters: [...pathParameters(op.path), ...queryParameters(op.query, convert)],
      responses: {},
    };
    if (!(entry.parameters as unknown[]).length) delete entry.parameters;
    if (op.body)
      entry.requestBody = { required: false, content: { "application/json": { schema: convert(op.body, "input") } } };
    if (op.requestBody)
      entry.requestBody = {
        description: op.requestBody.description,
        required: op.requestBody.required ?? true,
        content: mediaTypes(op.requestBody.content, convert, "input"),
      };
    if (op.response)
      entry.responses["200"] = {
        description: "OK",
        content: { "application/json": { schema: convert(op.response, "output") } },
      };
    for (const [status, doc] of Object.entries(op.responses ?? {}))
      entry.responses[status] = responseObject(doc, convert);
    const error = { $ref: `#/components/responses/${op.errorBody ?? "Error"}` };
    entry.responses["4XX"] = error;
    entry.responses["5XX"] = error;
    (paths[path] ??= {})[op.method.toLowerCase()] = entry;
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "inboxd",
      version: options.version,
      summary: "An open implementation of the Desktop Messaging API.",
      description:
        "One HTTP/JSON + WebSocket API over the chats, messages, contacts and accounts of many chat networks. " +
        "Every operation needs a bearer token (`inboxd token create`), except those marked public. " +
        "Operations and fields beyond the official 5.0.0 API carry `x-inboxd-extension: true`.",
      license: { name: "MIT", identifier: "MIT" },
    },
    security: [{ bearerAuth: [] }],
    tags: [...new Set(operations.map((o) => o.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      responses,
      securitySchemes: {
        bearerAuth: { type: "http", scheme: "bearer", description: "An access token: `inboxd token create`." },
      },
    },
  };
}

function pathParameters(path: string) {
  return [...path.matchAll(/:(\w+)/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
}

/**
 * One parameter per field of the query schema. A field that takes one value or several (`accountIDs=a&accountIDs=b`)
 * is documented as an array in the form style, the way OpenAPI clients send it.
 */
function queryParameters(
  query: v.GenericSchema | undefined,
  convert: (s: v.GenericSchema, mode: "input" | "output") => JsonSchema,
) {
  if (!query) return [];
  const object = convert(query, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, schema]) => {
    const many = (schema.anyOf as JsonSchema[] | undefined)?.find((s) => s.type === "array");
    const { description, ...rest } = many ?? schema;
    if (rest.type === "integer") delete rest.pattern; // queryInt: the digits pattern is implied
    return {
      name,
      in: "query",
      required: object.required?.includes(name) ?? false,
      ...(description ? { description } : {}),
      ...(many ? { style: "form", explode: true } : {}),
      schema: rest,
    };
  });
}

function mediaTypes(
  content: Record<string, v.GenericSchema | null>,
  convert: (s: v.GenericSchema, mode: "input" | "output") => JsonSchema,
  mode: "input" | "output",
) {
  return Object.fromEntries(
    Object.entries(content).map(([type, schema]) => [type, schema ? { schema: convert(schema, mode) } : {}]),
  );
}

function responseObject(doc: ResponseDoc, convert: (s: v.GenericSchema, mode: "input" | "output") => JsonSchema) {
  return {
    description: doc.description,
    ...(doc.content ? { content: mediaTypes(doc.content, convert, "output") } : {}),
    ...(doc.headers
      ? {
          headers: Object.fromEntries(
            Object.entries(doc.headers).map(([name, description]) => [
              name,
              { description, schema: { type: "string" } },
            ]),
          ),
        }
      : {}),
  };
}
