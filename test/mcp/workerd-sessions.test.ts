// A file of its own: freeing sessions in workerd waits for keep-alives (~20 s), which runs beside the other files.
import { startWorkerd } from "../harness/workerd.ts";
import { sessionTests } from "./sessions.ts";

sessionTests((options) => startWorkerd(options), "keep-alive");
