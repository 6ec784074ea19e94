// Opens the SQLite store at argv[2], writes one key and closes it, `argv[3]` times in a row, as a burst of CLI
// commands beside each other would. Prints each failure's message and exits 1 if there was one.
import { openSqliteStorage } from "../../adapters/node/sqlite-storage.ts";

const [path, rounds] = [process.argv[2]!, Number(process.argv[3] ?? 20)];
for (let round = 0; round < rounds; round++) {
  try {
    const { storage, close } = await openSqliteStorage(path);
    await storage.setItem(`round:${process.pid}:${round}`, { round });
    await close();
  } catch (error) {
    console.log(`round ${round}: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
