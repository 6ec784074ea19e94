import { toJsonSchema, type JsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";

export type { JsonSchema };

/**
 * JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1 and MCP) of a valibot schema. `input` describes what a
 * client sends (a pipeline stops at its first transformation: query fields stay strings); `output` what the API
 * answers. Checks that JSON Schema cannot express (`v.check`, custom transforms) are left out: the API still
 * enforces them and says so in its 400s. `ref` names shared schemas (`definitions`) by reference.
 */
export function jsonSchemaOf(
  schema: v.GenericSchema,
  options: {
    mode: "input" | "output";
    definitions?: Record<string, v.GenericSchema>;
    ref?: (name: string) => string;
  } = { mode: "input" },
): JsonSchema {
  const { ref } = options;
  const out = toJsonSchema(schema, {
    target: "draft-2020-12",
    typeMode: options.mode,
    errorMode: "ignore",
    definitions: options.definitions,
    ...(ref ? { overrideRef: ({ referenceId }: { referenceId: string }) => ref(referenceId) } : {}),
  });
  delete (out as { $schema?: string }).$schema;
  return out;
}
