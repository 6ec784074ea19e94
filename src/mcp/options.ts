/**
 * Which tools a server offers: all (default), only the read-only ones, or an allowlist. The CLI flag `--mcp-tools`
 * and the env var INBOXD_MCP_TOOLS take the same text: `all`, `read-only`, or tool names separated by commas.
 */
import type { AnyTool } from "./tool.ts";
import { TOOL_NAMES } from "./tools/index.ts";

export type ToolSelection = "all" | "read-only" | readonly string[];

export interface McpOptions {
  tools?: ToolSelection;
  /** Unexpected errors inside tools, as "error: …" lines (the app's log). */
  log?: (line: string) => void;
}

/** Parses the flag/env text; throws naming the valid choices when a name is unknown. */
export function parseToolSelection(text: string | undefined): ToolSelection {
  const value = (text ?? "").trim();
  if (value === "" || value === "all") return "all";
  if (value === "read-only") return "read-only";
  const names = value
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  checkToolSelection(names);
  return names;
}

export function checkToolSelection(selection: ToolSelection | undefined): void {
  if (!Array.isArray(selection)) return;
  const unknown = selection.filter((name) => !TOOL_NAMES.includes(name));
  if (unknown.length)
    throw new Error(
      `unknown MCP tool(s): ${unknown.join(", ")} (expected "all", "read-only" or names among ${TOOL_NAMES.join(", ")})`,
    );
}

/** Why a tool is not offered to a caller with these scopes, or undefined when it is. */
export function refusal(
  tool: AnyTool,
  selection: ToolSelection | undefined,
  scopes: readonly string[],
): string | undefined {
  if (Array.isArray(selection) && !selection.includes(tool.name)) return "it is not enabled on this server";
  if (!tool.readOnly && selection === "read-only") return "this server offers read-only tools only";
  if (!tool.readOnly && !scopes.includes("write")) return "this access token is read-only (it lacks the write scope)";
  return undefined;
}
