/**
 * Plumbing of the MCP suite: the official SDK client over either transport, with the bearer token as a header, and a
 * call helper that keeps what a model would read (the text) next to the structured result. Nothing here asserts.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

export type TransportKind = "streamable" | "sse";
export const TRANSPORTS: TransportKind[] = ["streamable", "sse"];

export const endpoint = (url: string, kind: TransportKind) =>
  new URL(`${url}${kind === "streamable" ? "/v0/mcp" : "/v0/sse"}`);

/** An initialized SDK client; `token` null sends no Authorization header. */
export async function connect(url: string, token: string | null, kind: TransportKind): Promise<Client> {
  const requestInit = token === null ? undefined : { headers: { authorization: `Bearer ${token}` } };
  const transport =
    kind === "streamable"
      ? new StreamableHTTPClientTransport(endpoint(url, kind), { requestInit })
      : new SSEClientTransport(endpoint(url, kind), { requestInit });
  const client = new Client({ name: "inboxd-mcp-suite", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** A JSON Schema 2020-12 validator (ajv, strict about the schemas themselves, formats checked). */
export function schemaCompiler() {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  return {
    /** Compiles a schema after checking it against the 2020-12 meta-schema; throws naming what is wrong. */
    compile(schema: object, what: string): ValidateFunction {
      if (!ajv.validateSchema(schema))
        throw new Error(`${what} is not a valid JSON Schema: ${ajv.errorsText(ajv.errors)}`);
      return ajv.compile(schema);
    },
    errors: (validate: ValidateFunction) => ajv.errorsText(validate.errors),
  };
}

const outputChecks = new WeakMap<Client, Map<string, ValidateFunction>>();

/** Lists the tools and compiles their output schemas, so that `ok` checks every structured result against them. */
export async function listTools(client: Client): Promise<Tool[]> {
  const { tools } = await client.listTools();
  const compiler = schemaCompiler();
  outputChecks.set(
    client,
    new Map(
      tools
        .filter((t) => t.outputSchema)
        .map((t) => [t.name, compiler.compile(t.outputSchema!, `${t.name}'s outputSchema`)]),
    ),
  );
  return tools;
}

export interface Called<T = any> {
  result: CallToolResult;
  /** The Markdown text (first content block). */
  text: string;
  structured: T;
  isError: boolean;
}

/** Calls a tool; protocol errors (an unknown or refused tool) reject, tool errors come back with isError. */
export async function call<T = any>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs = 20_000,
): Promise<Called<T>> {
  const result = (await client.callTool({ name, arguments: args }, undefined, {
    timeout: timeoutMs,
  })) as CallToolResult;
  const first = result.content[0];
  return {
    result,
    text: first?.type === "text" ? first.text : "",
    structured: result.structuredContent as T,
    isError: result.isError === true,
  };
}

/** Like `call`, but a tool error fails the test with the text the model would have read. */
export async function ok<T = any>(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs?: number,
): Promise<Called<T>> {
  const out = await call<T>(client, name, args, timeoutMs);
  if (out.isError) throw new Error(`${name} answered an error: ${out.text}`);
  const check = outputChecks.get(client)?.get(name);
  if (!check) throw new Error(`call listTools(client) before ok(client, "${name}"): its output schema is not known`);
  if (!check(out.structured))
    throw new Error(`${name}'s structuredContent breaks its outputSchema: ${schemaCompiler().errors(check)}`);
  return out;
}

/** The tools of the real app (same names and inputs), then inboxd's own, as tools/list orders them. */
export const APP_TOOLS = [
  "get_accounts",
  "search_chats",
  "get_chat",
  "list_messages",
  "search_messages",
  "send_message",
  "archive_chat",
  "set_chat_reminder",
  "clear_chat_reminder",
  "focus_app",
  "search",
  "search_docs",
];
export const OWN_TOOLS = [
  "list_unread",
  "wait_for_message",
  "get_message",
  "start_chat",
  "upload_asset",
  "download_asset",
  "edit_message",
  "delete_message",
  "add_reaction",
  "remove_reaction",
  "mark_read",
  "mark_unread",
];
export const READ_ONLY_TOOLS = [
  "get_accounts",
  "search_chats",
  "get_chat",
  "list_messages",
  "search_messages",
  "search",
  "search_docs",
  "list_unread",
  "wait_for_message",
  "get_message",
  "download_asset",
];

/** A message as the tests read it (REST and structuredContent alike). */
export interface Message {
  id: string;
  chatID: string;
  senderID: string;
  sortKey: string;
  text?: string;
  isSender?: boolean;
  isUnread?: boolean;
  linkedMessageID?: string;
  editedTimestamp?: string;
  textTruncated?: true;
  attachments?: {
    type: string;
    id?: string;
    fileName?: string;
    mimeType?: string;
    size?: { width: number; height: number };
  }[];
  reactions?: { id: string; participantID: string; reactionKey: string }[];
  sendStatus?: { status: string };
}
