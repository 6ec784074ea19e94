import http from "node:http";
import { memory } from "./daemon.ts";

/**
 * Memory while a large file goes through the daemon: a multipart upload of `sizeMB` generated on the fly (never held
 * in this process either), then a full download through /v1/assets/serve. The daemon's RSS is sampled every 50 ms;
 * "flat" means its peak stays within `flatMB` of the reading before the upload.
 */
export interface AssetMemoryResult {
  sizeMB: number;
  beforeMB: number;
  uploadPeakMB: number;
  servePeakMB: number;
  uploadSeconds: number;
  serveSeconds: number;
  servedBytes: number;
  flatMB: number;
  pass: boolean;
}

export async function measureAssetMemory(
  daemonPid: number,
  url: string,
  token: string,
  sizeMB: number,
  flatMB = 64,
): Promise<AssetMemoryResult> {
  const size = sizeMB * 1024 * 1024;
  const beforeMB = memory(daemonPid).rssMB;
  let peak = beforeMB;
  const sampler = setInterval(() => (peak = Math.max(peak, memory(daemonPid).rssMB)), 50);
  try {
    const t0 = performance.now();
    const upload = await uploadGenerated(url, token, size);
    const uploadSeconds = (performance.now() - t0) / 1000;
    const uploadPeakMB = peak;
    peak = memory(daemonPid).rssMB;
    const t1 = performance.now();
    const servedBytes = await download(
      `${url}/v1/assets/serve?url=${encodeURIComponent(`mxc://inboxd/${upload.uploadID}`)}`,
      token,
    );
    const serveSeconds = (performance.now() - t1) / 1000;
    const servePeakMB = peak;
    if (servedBytes !== size) throw new Error(`served ${servedBytes} bytes of ${size}`);
    return {
      sizeMB,
      beforeMB,
      uploadPeakMB,
      servePeakMB,
      uploadSeconds,
      serveSeconds,
      servedBytes,
      flatMB,
      pass: Math.max(uploadPeakMB, servePeakMB) - beforeMB <= flatMB,
    };
  } finally {
    clearInterval(sampler);
  }
}

function uploadGenerated(base: string, token: string, size: number): Promise<{ uploadID: string }> {
  const boundary = `----inboxd-bench-${Date.now()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const piece = Buffer.alloc(64 * 1024);
  for (let i = 0; i < piece.length; i++) piece[i] = (i * 31 + 7) & 0xff;
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(base);
    const req = http.request(
      {
        hostname,
        port,
        path: "/v1/assets/upload",
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": head.length + size + tail.length,
        },
      },
      (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(JSON.parse(body))
            : reject(new Error(`upload answered ${res.statusCode}: ${body}`)),
        );
      },
    );
    req.on("error", reject);
    let sent = 0;
    req.write(head);
    const pump = () => {
      while (sent < size) {
        const n = Math.min(piece.length, size - sent);
        sent += n;
        if (!req.write(n === piece.length ? piece : piece.subarray(0, n))) return void req.once("drain", pump);
      }
      req.end(tail);
    };
    pump();
  });
}

function download(target: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(target, { headers: { authorization: `Bearer ${token}` } }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`serve answered ${res.statusCode}`));
        let bytes = 0;
        res.on("data", (d: Buffer) => (bytes += d.length));
        res.on("end", () => resolve(bytes));
      })
      .on("error", reject);
  });
}
