import type * as Crypto from "@matrix-org/matrix-sdk-crypto-wasm";
import { NetworkError, type AccountRecords } from "../../bridges/connector.ts";
import type { LoginStep, StepSubmission } from "../../bridges/login.ts";
import { sleep } from "../../util/backoff.ts";
import { type CryptoLib, type CryptoSync, MatrixCrypto, newStoreKey } from "./crypto/machine.ts";
import type { DeviceTrust } from "./crypto/trust.ts";
import { MatrixHttp } from "./http.ts";
import type { MatrixState } from "./state.ts";

/**
 * The login steps after the password: verifying inboxd's device against the user's cross-signing identity, with the
 * recovery key or by comparing emoji with another of their sessions (crypto/trust.ts does the cryptography).
 *
 * Why in the login: a device that is not verified is one the user's other sessions, and careful correspondents,
 * do not share keys with, and it cannot read the key backup. The login is where the user is present to say the key
 * or look at the emoji. Skipping is allowed; the account then says `attention_required` until the device is
 * verified (by reconnecting it, or from another session).
 */

export const VERIFY_STEP = "matrix.verify.recovery_key";
const REQUEST_STEP = "matrix.verify.waiting_for_session";
const EMOJI_STEP = "matrix.verify.emoji";
/** How long another session has to accept the request, and then to compare the emoji. */
const ANSWER_MS = 5 * 60_000;
/** After the comparison: how long the other session has to send the backup key. */
const SECRETS_MS = 15_000;

/** Recovery-key mistakes asked about again rather than failing the login. */
const RETRY = new Set(["invalid_recovery_key", "wrong_recovery_key"]);

/** The device a login signed in with, its crypto open for the steps after the password. */
export interface LoginDevice {
  crypto: MatrixCrypto;
  /** The store's records when the login made the store: handed to the account it creates. */
  records?: Map<number, unknown>;
  /** Lets the device hear the homeserver for a while (a verification's to-device messages come with syncs). */
  listen(signal: AbortSignal): Promise<void>;
  /** Makes the store durable and lets go of it (the account's client opens it next). */
  close(): Promise<void>;
  /** Lets go of it for good: the login was abandoned (a new device's store is deleted; a running one's is kept). */
  discard(): Promise<void>;
}

/** Records held in memory for a store made before its account exists (completeLogin writes them with it). */
class HeldRecords implements AccountRecords {
  readonly parts = new Map<number, unknown>();
  async get(part: number) {
    return this.parts.get(part);
  }
  put(part: number, value: unknown) {
    if (value === null) this.parts.delete(part);
    else this.parts.set(part, value);
  }
  async commit() {}
}

/** Only what a verification needs from a sync: to-device messages and device list changes, no rooms. */
const LISTEN_FILTER = JSON.stringify({
  room: { rooms: [] },
  presence: { types: [] },
  account_data: { types: [] },
});

/**
 * A new device's store, made by the login: keys uploaded now (the other sessions must see the device to verify
 * it), its name and key put in `state` for the account.
 */
export async function openNewDevice(lib: CryptoLib, state: MatrixState): Promise<LoginDevice> {
  const records = new HeldRecords();
  const http = new MatrixHttp(state.homeserver, state.accessToken);
  state.cryptoStoreName = `inboxd-matrix-${crypto.randomUUID()}`;
  state.cryptoStoreKey = newStoreKey();
  const machine = await MatrixCrypto.open({
    lib,
    userID: state.userID,
    deviceID: state.deviceID,
    storeName: state.cryptoStoreName,
    storeKey: state.cryptoStoreKey,
    records,
    http,
  });
  let since: string | undefined;
  return {
    crypto: machine,
    records: records.parts,
    async listen(signal) {
      const answer = await http.request<CryptoSync & { next_batch?: unknown }>("GET", "/_matrix/client/v3/sync", {
        query: { since, timeout: since ? "5000" : "0", filter: LISTEN_FILTER, set_presence: "offline" },
        signal,
        timeoutMs: 35_000,
      });
      await machine.receiveSync(answer);
      if (typeof answer.next_batch === "string") since = answer.next_batch;
    },
    async close() {
      await machine.checkpoint(true);
      machine.close();
    },
    discard: () => machine.discard(),
  };
}

/** The running account's device (a reconnect of the same device): its own sync brings the messages. */
export function liveDevice(crypto: MatrixCrypto): LoginDevice {
  return {
    crypto,
    listen: (signal) => sleep(500, signal),
    close: () => crypto.checkpoint(true),
    discard: () => crypto.checkpoint(true),
  };
}

/** The verification steps of one login. `finish` makes the login's complete step, with what to say. */
export class LoginVerification {
  private readonly trust: DeviceTrust;
  private request?: Crypto.VerificationRequest;
  private sas?: Crypto.Sas;
  private deadline = 0;

  constructor(
    private readonly device: LoginDevice,
    private readonly finish: (said: string) => Promise<LoginStep>,
  ) {
    this.trust = device.crypto.trust();
  }

  /** Whether the device needs verifying: the user has a cross-signing identity that does not sign it yet. */
  async needed(): Promise<boolean> {
    return (await this.trust.status()) === "unverified";
  }

  private userID = "";

  firstStep(userID: string): LoginStep {
    this.userID = userID;
    return {
      type: "user_input",
      stepID: VERIFY_STEP,
      instructions:
        `Verify this session of ${userID} so that it can read your encrypted history. Enter your recovery key ` +
        "(or security phrase). Leave it empty to compare emoji with another of your sessions instead, or enter " +
        "“skip” to verify later.",
      fields: [{ id: "recoveryKey", label: "Recovery key", type: "password", optional: true }],
    };
  }

  async submit(step: LoginStep, submission: StepSubmission): Promise<LoginStep> {
    if (step.stepID !== VERIFY_STEP) throw new NetworkError("rejected", `nothing to submit at ${step.stepID}`);
    const input = (submission.fields.recoveryKey ?? "").trim();
    if (input.toLowerCase() === "skip")
      return this.finish("Signed in without verifying this session: the account asks for it until it is verified.");
    if (input) {
      let restored: number | undefined;
      try {
        restored = (await this.trust.useRecoveryKey(input)).restoredKeys;
      } catch (error) {
        // A mistyped key is asked for again (the device is made; failing the login would waste it).
        if (error instanceof NetworkError && RETRY.has(error.code ?? "")) {
          const again = this.firstStep(this.userID);
          return {
            ...again,
            instructions: `${error.message[0].toUpperCase()}${error.message.slice(1)}. ${again.instructions}`,
          };
        }
        throw error;
      }
      return this.finish(
        restored === undefined
          ? "Verified with your recovery key; the key backup could not be read now (its keys are looked up as messages need them)."
          : `Verified with your recovery key; ${restored} room keys restored from your key backup.`,
      );
    }
    this.request = await this.trust.requestVerification();
    this.deadline = Date.now() + ANSWER_MS;
    return {
      type: "display_and_wait",
      stepID: REQUEST_STEP,
      instructions:
        "Accept the verification request on another of your sessions (Element shows “Verify this session?”), " +
        "then choose to compare emoji.",
      display: { type: "nothing" },
    };
  }

  /** Follows the verification until its next step: emoji to compare, then the end. */
  async wait(step: LoginStep, signal: AbortSignal): Promise<LoginStep> {
    const { lib } = this.device.crypto;
    while (!signal.aborted) {
      if (Date.now() > this.deadline) {
        await this.cancel();
        throw new NetworkError(
          "rejected",
          "no session answered the verification in 5 minutes: start again, and enter “skip” to verify later",
          "verification_timeout",
        );
      }
      try {
        await this.device.listen(signal);
      } catch (error) {
        if (signal.aborted) break;
        throw error;
      }
      const request = this.request!;
      if (request.isCancelled() || this.sas?.isCancelled()) {
        const why = this.sas?.cancelInfo()?.reason() ?? request.cancelInfo?.reason() ?? "cancelled";
        throw new NetworkError(
          "rejected",
          `the verification was cancelled (${why}): if the emoji did not match, do not use this session; start again ` +
            "to retry, or enter “skip” to verify later",
          "verification_cancelled",
        );
      }
      if (step.stepID === REQUEST_STEP) {
        const phase = request.phase();
        if (phase === lib.VerificationRequestPhase.Ready || phase === lib.VerificationRequestPhase.Transitioned)
          await this.trust.answeredBySignedSession(request); // else cancelled, and thrown
        // Either side may start the comparison (Element does when one picks "compare emoji" there), and when both
        // do, one start wins: the request's own verification is the one to follow.
        const current = request.getVerification();
        if (current instanceof lib.Sas) this.sas = current;
        else if (!this.sas && phase === lib.VerificationRequestPhase.Ready)
          this.sas = await this.trust.startSas(request);
        if (this.sas) await this.trust.acceptSas(this.sas); // a start of the other side's (else nothing to do)
        const emoji = this.sas?.emoji();
        if (!emoji) continue;
        const shown = emoji.map((e) => ({ symbol: e.symbol, name: e.description }));
        for (const e of emoji) e.free();
        // inboxd cannot ask whether they match; the person compares and decides on the other session, whose
        // confirmation (or cancellation) ends the verification. inboxd's side is confirmed as the emoji are shown.
        await this.trust.confirmSas(this.sas!);
        return {
          type: "display_and_wait",
          stepID: EMOJI_STEP,
          instructions:
            `Compare these emoji with those on your other session: ${shown.map((e) => `${e.symbol} ${e.name}`).join(", ")}. ` +
            "If they match, confirm there; if not, cancel there.",
          display: { type: "emoji", imageURL: emojiImage(shown) },
        };
      }
      if (step.stepID === EMOJI_STEP && this.sas?.isDone()) return this.done(signal);
    }
    return step;
  }

  /** The comparison succeeded: the other session signed this device; the backup key is asked for and read. */
  private async done(signal: AbortSignal): Promise<LoginStep> {
    await this.trust.requestSecrets();
    const until = Date.now() + SECRETS_MS;
    let restored: number | undefined;
    while (restored === undefined && Date.now() < until && !signal.aborted) {
      await this.device.listen(signal).catch(() => undefined);
      // The backup key is kept before the backup is read: a failed read leaves the per-message lookups to it.
      restored = await this.trust.restoreFromGossip().catch(() => 0);
    }
    const verified = (await this.trust.status()) === "verified";
    return this.finish(
      `${verified ? "Verified" : "Compared emoji, but your other session did not sign this one yet"}; ` +
        (restored === undefined
          ? "your other session sent no key-backup key (its history will be read as keys arrive)."
          : `${restored} room keys restored from your key backup.`),
    );
  }

  async cancel(): Promise<void> {
    const target = this.sas ?? this.request;
    if (target && !target.isDone() && !target.isCancelled()) await this.trust.cancel(target);
  }
}

/** The emoji as an image (an SVG data URL, what the API's emoji display carries), each with its name under it. */
function emojiImage(emoji: { symbol: string; name: string }[]): string {
  const cell = 96;
  const xml = (text: string) =>
    text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
  const cells = emoji
    .map(
      (e, i) =>
        `<text x="${i * cell + cell / 2}" y="56" font-size="44" text-anchor="middle">${xml(e.symbol)}</text>` +
        `<text x="${i * cell + cell / 2}" y="90" font-size="14" text-anchor="middle" font-family="sans-serif">${xml(e.name)}</text>`,
    )
    .join("");
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${emoji.length * cell}" height="${cell + 8}">${cells}</svg>`;
  return `data:image/svg+xml;base64,${btoa(String.fromCharCode(...new TextEncoder().encode(svg)))}`;
}
