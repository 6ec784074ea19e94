/** Debian's chromium as the browser tests and the web bench launch it, through playwright-core. */
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

/** As root and on a closed network: no sandbox, no background connections (they are refused here). */
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
