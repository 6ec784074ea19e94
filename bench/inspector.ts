/**
 * A minimal client of a Node process's inspector (started with --inspect): forces a full GC and reads the V8 heap,
 * so that memory readings of the daemon do not depend on when its collector last ran.
 */
import WebSocket from "ws";

export interface Inspector {
  /** Full garbage collection in the inspected process. */
  collectGarbage(): Promise<void>;
  /** V8 heap: bytes in use and bytes reserved. */
  heapUsage(): Promise<{ usedSize: number; totalSize: number }>;
  close(): void;
}

export async function connectInspector(port: number): Promise<Inspector> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let nextID = 1;
  const waiting = new Map<number, { resolve: (r: any) => void; reject: (e: Error) => void }>();
  ws.on("message", (data) => {
    const message = JSON.parse(data.toString());
    const call = waiting.get(message.id);
    if (!call) return;
    waiting.delete(message.id);
    if (message.error) call.reject(new Error(`inspector: ${JSON.stringify(message.error)}`));
    else call.resolve(message.result);
  });
  ws.on("close", () => {
    for (const call of waiting.values()) call.reject(new Error("inspector connection closed"));
    waiting.clear();
  });
  const call = (method: string, params: object = {}) =>
    new Promise<any>((resolve, reject) => {
      const id = nextID++;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    collectGarbage: () => call("HeapProfiler.collectGarbage"),
    heapUsage: () => call("Runtime.getHeapUsage"),
    close: () => ws.close(),
  };
}
