/**
 * Plumbing for the Matrix suite: a runtime running inboxd, a real Synapse, plain Matrix clients as the other people,
 * and the XMPP suite's API client (the official SDK plus raw HTTP, every JSON answer checked). Nothing here asserts.
 */
import { describe } from "vitest";
import { synapseSource } from "../harness/synapse.ts";
import type { Runtime } from "../xmpp/kit.ts";

export { Client, enc, imageBytes, randomToken, sleep, waitFor, type Runtime } from "../xmpp/kit.ts";

export interface MatrixTarget {
  name: string;
  /** `firstBackfill`: messages per room a first sync loads (small, so that paging back has to reach the server). */
  start(token: string, options: { firstBackfill: number }): Promise<Runtime>;
}

/**
 * `describe`, or — where the Synapse source is missing — a skip that says why and how to get it. In CI a missing
 * source fails the run instead: an integration suite never skips silently there.
 */
export function describeWithSynapse(name: string, body: () => void) {
  const source = synapseSource();
  if ("path" in source) return describe(name, body);
  if (process.env.CI === "true")
    throw new Error(`the Matrix suites need Synapse and CI must run them: ${source.missing}`);
  console.warn(`SKIPPED ${name}: ${source.missing}`);
  return describe.skip(name, body);
}

export const MATRIX_BRIDGE = "local-matrix";
