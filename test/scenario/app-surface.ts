/** Typing, /v1/app/setup, bridge connections and the newer login-step types (issue 10). */
import type { Env } from "./kit.ts";

export function appSurfaceScenarios(_env: Env) {}
