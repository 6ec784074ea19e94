// A process that stops like the daemon (stopSignal), but takes 600 ms to do it, so that a test can signal it again
// in the middle of its shutdown. Prints "ready", "stopping", "stopped".
import { stopSignal } from "../../adapters/node/stop-signal.ts";

const alive = setInterval(() => undefined, 60_000); // what the daemon's listening socket does: keep the process up
const stopping = stopSignal(); // before "ready": a signal right after it must find the listener
console.log("ready");
await stopping;
console.log("stopping");
await new Promise((resolve) => setTimeout(resolve, 600));
console.log("stopped");
clearInterval(alive);
