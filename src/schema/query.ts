import * as v from "valibot";
import { LIMITS, utf8Length } from "./limits.ts";

// Query-string fields as valibot schemas, for routes, MCP and /v0 alike: strings in, typed values out.
export const queryArray = v.pipe(
  v.union([v.string(), v.array(v.string())]),
  v.transform((x) => (Array.isArray(x) ? x : [x])),
  v.maxLength(LIMITS.arrayItems, `must have at most ${LIMITS.arrayItems} items`),
  v.check(
    (items) => items.every((item) => utf8Length(item) <= LIMITS.idBytes),
    `each item must be at most ${LIMITS.idBytes} bytes`,
  ),
);
/** A query boolean: `true` or `false` and nothing else (no `1`, `yes`, `True`): any other value is a 400 naming it. */
const trueOrFalse = v.picklist(["true", "false"], "expected true or false");
const toBoolean = v.transform((x: "true" | "false") => x === "true");
export const queryBoolean = v.pipe(trueOrFalse, toBoolean);
/** queryBoolean with a description, which the OpenAPI document keeps only before the transformation. */
export const describedQueryBoolean = (description: string) =>
  v.pipe(trueOrFalse, v.description(description), toBoolean);
// The metadata is what the OpenAPI document says of the field (src/spec): the value a client means, not its text.
export const queryInt = (min: number, max: number) =>
  v.pipe(
    v.string(),
    v.regex(/^-?\d+$/, "expected an integer"),
    v.metadata({ type: "integer", minimum: min, maximum: max }),
    v.transform(Number),
    v.minValue(min),
    v.maxValue(max),
  );
export const isoDate = v.pipe(
  v.string(),
  v.metadata({ format: "date-time" }),
  // A `+hh:mm` offset sent with a raw `+` arrives as " hh:mm" (a `+` in a query is a space): put the plus back.
  v.transform((s) => s.replace(/ (\d{2}(?::?\d{2})?)$/, "+$1")),
  v.isoTimestamp("expected an ISO 8601 date-time"),
  v.transform((s) => Date.parse(s)),
);
export const direction = v.picklist(["before", "after"], "expected before or after");
