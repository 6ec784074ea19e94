import BeeperDesktop from "@beeper/desktop-api";
import { NetworkError } from "../../bridges/connector.ts";
import type { UpstreamAuth } from "./state.ts";

/**
 * The official SDK pointed at an upstream server, with the token read at request time (an OAuth login refreshes
 * it) and one refresh-and-retry on a 401. Failures become NetworkErrors the host understands.
 */
export function upstreamSDK(baseURL: string, auth: () => UpstreamAuth, renew?: () => Promise<unknown>): BeeperDesktop {
  const authorized: typeof fetch = async (input, init) => {
    const send = () => {
      const headers = new Headers(init?.headers);
      headers.set("authorization", `Bearer ${auth().accessToken}`);
      return fetch(input, { ...init, headers });
    };
    const response = await send();
    if (response.status !== 401 || !renew || !auth().refreshToken) return response;
    // A refresh the server refuses leaves the 401 standing: the caller reports it as a login to redo.
    const renewed = await renew().then(
      () => true,
      () => false,
    );
    return renewed ? send() : response;
  };
  return new BeeperDesktop({
    baseURL,
    accessToken: auth().accessToken,
    fetch: authorized,
    maxRetries: 2,
    timeout: 30_000,
    logLevel: "off",
  });
}

/** What an SDK error means for the host: a NetworkError with the upstream's own message. */
export function networkErrorOf(error: unknown): NetworkError {
  if (error instanceof NetworkError) return error;
  if (error instanceof BeeperDesktop.APIError) {
    const body = error.error as { code?: unknown; message?: unknown } | undefined;
    const said = typeof body?.message === "string" ? body.message : error.message;
    if (error instanceof BeeperDesktop.APIConnectionError)
      return new NetworkError("unavailable", `the upstream server cannot be reached: ${said}`, "unreachable");
    if (error.status === 401)
      return new NetworkError("rejected", `the upstream server refused the token: ${said}`, "invalid_token");
    if (error.status === 404) return new NetworkError("not_found", `upstream: ${said}`);
    if (error.status === 429 || (error.status ?? 0) >= 500) return new NetworkError("unavailable", `upstream: ${said}`);
    return new NetworkError(
      error.status === 422 && body?.code === "NOT_SUPPORTED" ? "unsupported" : "rejected",
      `upstream: ${said}`,
      typeof body?.code === "string" ? body.code.toLowerCase() : undefined,
    );
  }
  return new NetworkError("unavailable", `upstream: ${error instanceof Error ? error.message : String(error)}`);
}

/** Runs an SDK call, turning its failures into NetworkErrors. */
export async function upstreamCall<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw networkErrorOf(error);
  }
}
