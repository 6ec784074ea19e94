/** initialize and tools/list as any MCP client sees them: names, JSON Schemas that compile, annotations, instructions. */
import { expect, it } from "vitest";
import { APP_TOOLS, listTools, OWN_TOOLS, READ_ONLY_TOOLS, schemaCompiler } from "./kit.ts";
import type { McpEnv } from "./suite.ts";

const DESTRUCTIVE = ["clear_chat_reminder", "edit_message", "delete_message", "remove_reaction"];

export function listingTests(env: McpEnv) {
  it("initializes: server name and version, tools and resources, instructions on how the tools go together", () => {
    expect(env.client.getServerVersion()).toMatchObject({
      name: "inboxd",
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
    expect(env.client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {} });
    const instructions = env.client.getInstructions() ?? "";
    for (const word of ["list_unread", "wait_for_message", "untrusted", "cursor"]) expect(instructions).toContain(word);
  });

  it("lists the app's 12 tools (same names) and inboxd's own, each with input/output JSON Schemas that compile", async () => {
    const tools = await listTools(env.client);
    expect(tools.map((t) => t.name)).toEqual([...APP_TOOLS, ...OWN_TOOLS]);
    const compiler = schemaCompiler();
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe("object");
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      compiler.compile(tool.inputSchema, `${tool.name}'s inputSchema`);
      compiler.compile(tool.outputSchema!, `${tool.name}'s outputSchema`);
      expect(tool.description?.length, tool.name).toBeGreaterThan(40);
    }
    const byName = new Map(tools.map((t) => [t.name, t]));
    // The real app's inputs: send_message {chatID*, text, replyToMessageID}, set_chat_reminder {chatID*, reminder*{remindAtMs…}}.
    expect(byName.get("send_message")!.inputSchema).toMatchObject({
      required: ["chatID"],
      properties: { chatID: { type: "string" }, text: { type: "string" }, replyToMessageID: { type: "string" } },
    });
    expect(byName.get("set_chat_reminder")!.inputSchema).toMatchObject({
      required: ["chatID", "reminder"],
      properties: {
        reminder: { properties: { remindAtMs: { type: "number" }, dismissOnIncomingMessage: { type: "boolean" } } },
      },
    });
    expect(Object.keys(byName.get("focus_app")!.inputSchema.properties!).sort()).toEqual([
      "chatID",
      "draftAttachmentPath",
      "draftText",
      "messageID",
    ]);
    expect(byName.get("search_messages")!.inputSchema.properties).toMatchObject({
      query: {},
      chatIDs: { type: "array" },
      cursor: {},
      direction: { enum: ["before", "after"] },
    });
    // Attachments: an uploadID, or base64 content with a file name.
    const attachment = byName.get("send_message")!.inputSchema.properties!.attachment as {
      anyOf: { required: string[] }[];
    };
    expect(attachment.anyOf.map((a) => a.required)).toEqual([["uploadID"], ["content", "fileName"]]);
  });

  it("annotates every tool: read-only ones, destructive ones, idempotent ones", async () => {
    for (const tool of await listTools(env.client)) {
      const readOnly = READ_ONLY_TOOLS.includes(tool.name);
      expect(tool.annotations, tool.name).toMatchObject({
        readOnlyHint: readOnly,
        destructiveHint: DESTRUCTIVE.includes(tool.name),
      });
      expect(typeof tool.annotations?.idempotentHint, tool.name).toBe("boolean");
      expect(typeof tool.annotations?.openWorldHint, tool.name).toBe("boolean");
    }
    const hints = Object.fromEntries((await listTools(env.client)).map((t) => [t.name, t.annotations!]));
    expect(hints.send_message).toMatchObject({ idempotentHint: false, openWorldHint: true });
    expect(hints.archive_chat).toMatchObject({ idempotentHint: true, destructiveHint: false });
    expect(hints.delete_message).toMatchObject({ idempotentHint: false, destructiveHint: true });
  });
}
