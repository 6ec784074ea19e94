/** The printed tables of the desktop-api connector's benchmark (bench/upstream.ts), with the targets. */
import { table, type Percentiles } from "./xmpp-client.ts";
import type { CpuSpan, PagingRun, UpstreamResult } from "./upstream.ts";

/** "Send through inboxd within 2× of the same send made directly, and p99 ≤ 50 ms." */
const LATENCY_TARGET_P99_MS = 50;
const LATENCY_TARGET_RATIO = 2;

const ms = (x: number) => x.toFixed(2);
const s = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(2));
const int = (x: number) => Math.round(x).toLocaleString("en-US");
const verdict = (pass: boolean) => (pass ? "MET" : "MISS  <<<");
const othersPct = (cpu: CpuSpan, seconds: number) => `${int((cpu.others / seconds) * 100)} %`;
const order = (inboxdFirst: boolean, i: number) => `round ${i + 1} (${inboxdFirst ? "inboxd" : "plain"} first)`;
const checked = (run: { verified: boolean }, count: number, n: string) =>
  `${int(count)} / ${n}${run.verified ? "" : " (!)"}`;

export function formatUpstream(r: UpstreamResult): string {
  const n = int(r.messages);
  const plainCells = (p: PagingRun, attempt: number) => [
    s(p.ms / 1000),
    int(p.pages),
    s(p.cpu.upstream),
    s(p.cpu.bench),
    s(p.cpu.others),
    String(attempt),
  ];
  const plainHeader = ["plain client s", "pages", "upstream CPU s", "client CPU s", "others' CPU s", "attempt"];

  // 1. Backfill at login
  const backfill = table(
    [
      `backfill of ${n} messages at login`,
      "login → connected s",
      "login ms",
      "→ backfilling s",
      "longest poll s",
      "daemon CPU s",
      "upstream CPU s",
      "others' CPU s",
      "stored (checked via API)",
      ...plainHeader,
    ],
    r.backfill.map((x, i) => [
      order(x.inboxdFirst, i),
      s(x.inboxd.connectedMs / 1000),
      int(x.inboxd.loginMs),
      s(x.inboxd.backfillingMs === undefined ? undefined : x.inboxd.backfillingMs / 1000),
      s(x.inboxd.longestPollMs / 1000),
      s(x.inboxd.cpu.daemon),
      s(x.inboxd.cpu.upstream),
      s(x.inboxd.cpu.others),
      checked(x.inboxd, x.inboxd.stored, n),
      ...plainCells(x.plain, x.attempt),
    ]),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
  );

  // 2. Paging back
  const paging = table(
    [
      `paging back through ${n} messages`,
      "inboxd s",
      "pages",
      "messages/s",
      "daemon CPU s",
      "upstream CPU s",
      "client CPU s",
      "others' CPU s",
      "read (checked)",
      ...plainHeader,
    ],
    r.paging.map((x, i) => [
      order(x.inboxdFirst, i),
      s(x.inboxd.ms / 1000),
      int(x.inboxd.pages),
      int(x.inboxd.messages / (x.inboxd.ms / 1000)),
      s(x.inboxd.cpu.daemon),
      s(x.inboxd.cpu.upstream),
      s(x.inboxd.cpu.bench),
      s(x.inboxd.cpu.others),
      checked(x.inboxd, x.inboxd.messages, n),
      ...plainCells(x.plain, x.attempt),
    ]),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
  );
  const problems = [
    ...r.backfill.flatMap((x, i) =>
      [x.inboxd.problem, x.plain.problem].filter(Boolean).map((p) => `  backfill round ${i + 1}: ${p}`),
    ),
    ...r.paging.flatMap((x, i) =>
      [x.inboxd.problem, x.plain.problem].filter(Boolean).map((p) => `  paging round ${i + 1}: ${p}`),
    ),
  ];

  // 3. Round trip
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
  const ratio = (key: "p50" | "p90" | "p99") => l.inboxd[key] / l.direct[key];
  const p99Pass = l.inboxd.p99 <= LATENCY_TARGET_P99_MS;
  const ratioPass = ratio("p99") <= LATENCY_TARGET_RATIO;
  const latency = table(
    [
      `send → Echo's answer on /v1/ws (${int(l.sends)} sends per path after ${l.warmupSends} warm-up, alternating)`,
      "p50 ms",
      "p90 ms",
      "p99 ms",
      "max ms",
      "target",
      "result",
    ],
    [
      row(
        "through inboxd: POST here → Echo's answer at a /v1/ws client here",
        l.inboxd,
        `p99 ≤ ${LATENCY_TARGET_P99_MS} ms`,
        verdict(p99Pass),
      ),
      row("  the POST's HTTP response (a pending message; the upstream send follows)", l.inboxdResponse),
      row("  the upstream's /v1/ws client has the sent message", l.inboxdAtUpstream),
      row("  the upstream's /v1/ws client has Echo's answer", l.inboxdEchoAtUpstream),
      row("direct: POST to the upstream → Echo's answer at its /v1/ws client", l.direct),
      row("  the POST's HTTP response (for reference)", l.directResponse),
      [
        "  through inboxd ÷ direct",
        `${ratio("p50").toFixed(2)}×`,
        `${ratio("p90").toFixed(2)}×`,
        `${ratio("p99").toFixed(2)}×`,
        "",
        `≤ ${LATENCY_TARGET_RATIO}× at p99`,
        verdict(ratioPass),
      ],
    ],
    [1, 2, 3, 4],
  );
  const roundTrips = (l.sends + l.warmupSends) * 2;
  const misses = [p99Pass, ratioPass].filter((x) => !x).length;
  const load = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(" ");
  return [
    `Desktop API connector (bridge local-desktop-api) against another inboxd on loopback; ${r.cpus} CPUs; rate limiting off on every daemon`,
    `measured by: ${r.command}`,
    `The upstream: its own process, sandboxEchoDelayMs 0; one sandbox account whose one chat (Echo) holds ${n} messages (inboxd seed --chats 1`,
    `--messages ${r.messages} --accounts 1, ${s(r.seedSeconds)} s, not part of any figure). The plain client: a new keep-alive connection to the upstream paging`,
    "GET /v1/chats/{id}/messages back with each page's oldestCursor (20 a page): the floor of what the connector reads; which of the two goes first",
    "alternates by round. CPU over each span (others': every other process of the machine; a large value means the figure includes waiting for a CPU);",
    `a pair during which other processes took over 30 % of a core is measured again, up to 3 attempts; the quietest is shown.`,
    "",
    backfill,
    `median login → connected: ${s(r.backfillMedianMs / 1000)} s (${int(r.messages / (r.backfillMedianMs / 1000))} messages/s); median plain client: ${s(r.plainMedianMs / 1000)} s ` +
      `(inboxd ÷ plain: ${(r.backfillMedianMs / r.plainMedianMs).toFixed(2)}×); no target set, reported`,
    `A fresh data dir and daemon each round (bench/tuned-daemon.ts, desktopApiFirstBackfill = ${n}), timed from POST login-sessions (flow token) to the`,
    "first poll (every 25 ms, each on a new connection) of GET /v1/accounts/{id} reading `connected`; then every stored text is read back and compared",
    "with the upstream's, in order. longest poll: the longest one of those polls waited for its answer (the daemon answering no request meanwhile).",
    "",
    paging,
    `median paging back through inboxd: ${s(r.pagingMedianMs / 1000)} s (${int(r.messages / (r.pagingMedianMs / 1000))} messages/s); median plain client: ${s(r.plainMedianMs / 1000)} s ` +
      `(inboxd ÷ plain: ${(r.pagingMedianMs / r.plainMedianMs).toFixed(2)}×); no target set, reported`,
    "A fresh data dir and daemon each round (the CLI as built: the first load reads 50 messages a chat), signed in and `connected` before the timing",
    "(not part of it); then the same paging as the plain client's, on the daemon: past the first load each page waits for the connector's fetchHistory.",
    ...(problems.length ? ["Problems:", ...problems] : []),
    "",
    latency,
    "On the daemon as users run it (the CLI as built), signed in to the upstream. One send after another, the paths in turn: timed from the start of",
    "the POST to a /v1/ws client subscribed to that chat (here, or on the upstream) receiving Echo's answer (matched on its text); before the next send",
    "both clients have it. The HTTP and WebSocket clients run in the bench process. The rows under the inboxd path time the same sends to the upstream's",
    "client holding the sent message, then Echo's answer: the rest of the figure is the way back through the connector.",
    `CPU over the ${int(roundTrips)} round trips (${s(l.seconds)} s): daemon ${s(l.cpu.daemon)} s, upstream ${s(l.cpu.upstream)} s, bench ${s(l.cpu.bench)} s; other processes took ${othersPct(l.cpu, l.seconds)} of a core.`,
    "",
    `Machine load during the section: load average ${load(r.loadBefore)} before, ${load(r.loadAfter)} after.`,
    misses ? `${misses} upstream target(s) MISSED` : "upstream targets met",
  ].join("\n");
}
