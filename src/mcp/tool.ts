/**
 * What an MCP tool is here: valibot schemas for its arguments and its structured result (the same pieces the REST
 * routes validate with), the hints MCP clients show, and a `run` that calls the services. `callTool` is the one
 * place that validates arguments and turns a service's ApiError into a tool error the model can act on.
 */
import * as v from "valibot";
import type { CallToolResult, ContentBlock, Tool } from "@modelcontextprotocol/server";
import type { EventHub } from "../events/hub.ts";
import { ApiError, clip } from "../errors.ts";
import { checkJsonStrings, LIMITS } from "../schema/limits.ts";
import type { Context } from "../services/context.ts";
import { jsonSchemaOf } from "../spec/json-schema.ts";
import type { DocsIndex } from "./docs/search.ts";

/** What a running tool may use besides its arguments. */
export interface ToolContext {
  app: Context;
  events: EventHub;
  /** Origin the client reached this server at (for links to /v1/assets/serve). */
  origin: string;
  /** Aborted when the client cancels the call or goes away. */
  signal: AbortSignal;
  /** Reports progress when the client asked for it (keeps long waits from hitting client timeouts). */
  progress(done: number, total: number, message: string): Promise<void>;
  docs(): DocsIndex;
}

export interface ToolOutput<T> {
  structured: T;
  /** Markdown written for a model to read. */
  text: string;
  /** Blocks after the text: images, links to files. */
  extra?: ContentBlock[];
}

export interface ToolSpec<I extends v.GenericSchema, O extends v.GenericSchema> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  /** Changes nothing: offered to read-only tokens and in read-only mode. Anything else needs the write scope. */
  readOnly: boolean;
  /** May delete or overwrite something (a message, a reaction, a reminder). */
  destructive?: boolean;
  /** Calling it twice with the same arguments does no more than calling it once. */
  idempotent?: boolean;
  /** Reaches people on a chat network (sends, edits, reactions, read receipts). */
  openWorld?: boolean;
  /** Top-level arguments whose strings may exceed LIMITS.stringBytes (their own schema bounds them: base64 files). */
  long?: string[];
  run(args: v.InferOutput<I>, tc: ToolContext): Promise<ToolOutput<v.InferOutput<O>>>;
}

export type AnyTool = ToolSpec<v.GenericSchema, v.GenericSchema>;

export const defineTool = <I extends v.GenericSchema, O extends v.GenericSchema>(spec: ToolSpec<I, O>): AnyTool =>
  spec as unknown as AnyTool;

const described = new WeakMap<AnyTool, Tool>();

/** The tool as tools/list shows it; its JSON Schemas are converted once. */
export function describeTool(tool: AnyTool): Tool {
  let out = described.get(tool);
  if (!out) {
    out = {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchemaOf(tool.input, { mode: "input" }) as Tool["inputSchema"],
      outputSchema: jsonSchemaOf(tool.output, { mode: "output" }) as Tool["outputSchema"],
      annotations: {
        title: tool.title,
        readOnlyHint: tool.readOnly,
        destructiveHint: !tool.readOnly && tool.destructive === true,
        idempotentHint: tool.readOnly || tool.idempotent === true,
        openWorldHint: tool.openWorld === true,
      },
    };
    described.set(tool, out);
  }
  return out;
}

/** Runs a tool: bad arguments and refused operations come back as tool errors (`isError`), which a model can fix. */
export async function callTool(
  tool: AnyTool,
  raw: Record<string, unknown> | undefined,
  tc: ToolContext,
  log?: (line: string) => void,
): Promise<CallToolResult> {
  try {
    const input = raw ?? {};
    for (const [key, value] of Object.entries(input))
      if (!tool.long?.includes(key)) checkJsonStrings(value, LIMITS.stringBytes, [], ["arguments", key]);
    const parsed = v.safeParse(tool.input, input, { abortPipeEarly: true });
    if (!parsed.success) return toolError(`Invalid arguments for ${tool.name}: ${describeIssues(parsed.issues)}`);
    const out = await tool.run(parsed.output, tc);
    return {
      content: [{ type: "text", text: out.text }, ...(out.extra ?? [])],
      structuredContent: out.structured as Record<string, unknown>,
    };
  } catch (error) {
    if (error instanceof ApiError)
      return toolError(
        `${tool.name} failed (${error.status} ${error.code}): ${clip(error.message, 300)}${issuesOf(error)}`,
      );
    log?.(`error: MCP tool ${tool.name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return toolError(`${tool.name} failed: internal error`);
  }
}

const toolError = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });

function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .slice(0, 5)
    .map(
      (issue) =>
        `${["arguments", ...(issue.path?.map((p) => String(p.key)) ?? [])].join(".")}: ${clip(issue.message, 200)}`,
    )
    .join("; ");
}

function issuesOf(error: ApiError): string {
  const issues = (error.details as { issues?: { path: (string | number)[]; message: string }[] } | undefined)?.issues;
  if (!issues?.length || issues.length === 1) return "";
  return ` (${issues
    .slice(0, 5)
    .map((i) => `${i.path.join(".")}: ${clip(i.message, 120)}`)
    .join("; ")})`;
}
