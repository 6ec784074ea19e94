/** The printed tables of the XMPP benchmark (bench/xmpp.ts), with the targets. */
import { table, type Percentiles } from "./xmpp-client.ts";
import type { XmppResult } from "./xmpp.ts";

const BACKFILL_TARGET_S = 10;
const LATENCY_TARGET_P99_MS = 50;

const ms = (x: number) => x.toFixed(2);
const s = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(2));
const int = (x: number) => Math.round(x).toLocaleString("en-US");
const verdict = (pass: boolean) => (pass ? "PASS" : "MISS  <<<");

export function formatXmpp(r: XmppResult): string {
  const n = int(r.messages);
  const backfillRows = r.backfill.map((b, i) => [
    `round ${i + 1} (${b.user})`,
    s(b.connectedAfterMs / 1000),
    s(b.backfillingAfterMs === undefined ? undefined : b.backfillingAfterMs / 1000),
    int(b.loginMs),
    s(b.daemonCpuSeconds),
    s(b.prosodyCpuSeconds),
    s(b.otherCpuSeconds),
    `${int(b.stored)} / ${int(b.expected)}${b.verified ? "" : " (!)"}`,
    s(b.sendSeconds),
    String(b.attempts),
  ]);
  const verified = r.backfill.every((b) => b.verified);
  const backfillPass = r.backfillMedianSeconds <= BACKFILL_TARGET_S && verified;
  const backfill = table(
    [
      `backfill of ${n} archived messages`,
      "complete → connected s",
      "→ backfilling s",
      "login ms",
      "daemon CPU s",
      "Prosody CPU s",
      "others' CPU s",
      "stored (checked via API)",
      "bob's sending s",
      "attempts",
    ],
    backfillRows,
    [1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
  const { latency: l } = r;
  const row = (name: string, p: Percentiles, target = "", result = "") => [
    name,
    ms(p.p50),
    ms(p.p90),
    ms(p.p99),
    ms(p.max),
    target,
    result,
  ];
  const latencyPass = l.inboxd.p99 <= LATENCY_TARGET_P99_MS;
  const latency = table(
    [
      `send → Prosody → other client (${int(l.sends)} sends after ${l.warmupSends} warm-up)`,
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "max ms",
      "target",
      "result",
    ],
    [
      row(
        "inboxd: POST /v1/chats/{id}/messages → stanza at bob",
        l.inboxd,
        `p99 ≤ ${LATENCY_TARGET_P99_MS} ms`,
        verdict(latencyPass),
      ),
      row("  the POST's HTTP response (for reference)", l.httpResponse),
      row("baseline: the user's own plain client → stanza at bob", l.baseline),
      [
        "  inboxd's overhead (inboxd − baseline)",
        ms(l.inboxd.p50 - l.baseline.p50),
        ms(l.inboxd.p90 - l.baseline.p90),
        ms(l.inboxd.p99 - l.baseline.p99),
        "",
        "",
        "",
      ],
    ],
    [1, 2, 3, 4],
  );
  const problems = r.backfill.filter((b) => b.problem).map((b) => `  ${b.user}: ${b.problem}`);
  const misses = [backfillPass, latencyPass].filter((x) => !x).length;
  return [
    `XMPP (bridge local-xmpp) against Prosody ${r.prosodyVersion} on loopback`,
    "",
    backfill,
    `median complete → connected: ${s(r.backfillMedianSeconds)} s; target ≤ ${BACKFILL_TARGET_S} s, every message stored: ${verdict(backfillPass)}`,
    "Each round: a fresh user and daemon data dir. bob's messages are sent before the login (not part of the figure). The figure runs from",
    "the login session's `complete` answer to the first poll (every 5 ms) of GET /v1/accounts/{id} that reads `connected`; CPU over that span",
    `(others': every other process of the machine, ${r.cpus} CPUs; a large value means the figure includes waiting for a CPU). A round during`,
    "which other processes took over 30 % of a core is measured again with a fresh user, up to 3 attempts; the quietest is shown.",
    ...(problems.length ? ["Backfill problems:", ...problems] : []),
    "",
    latency,
    "Sends one after another on the last backfilled account: timed from the start of the POST (or of the plain client's write) to bob's client",
    "holding the stanza (matched on a unique body); the HTTP client, bob and the plain client run in the bench process, inboxd in its own.",
    `Other processes took ${int(l.inboxdOtherCpuPct)} % of a core during the inboxd sends (${s(l.inboxdSeconds)} s), ${int(l.baselineOtherCpuPct)} % during the baseline (${s(l.baselineSeconds)} s).`,
    "",
    misses ? `${misses} XMPP target(s) MISSED` : "XMPP targets met",
  ].join("\n");
}
