/**
 * The bare baseline: node:http answering every request with the same JSON bytes (a captured GET /v1/chats body).
 * Usage: node --import tsx bench/baseline-server.ts BODY_FILE PORT
 */
import { readFileSync } from "node:fs";
import http from "node:http";

const [bodyFile, port] = process.argv.slice(2);
const body = readFileSync(bodyFile);
const headers = { "content-type": "application/json", "content-length": String(body.length) };

const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(port), "127.0.0.1");
process.once("SIGTERM", () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
