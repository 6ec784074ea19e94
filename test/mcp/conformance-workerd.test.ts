import { startWorkerd } from "../harness/workerd.ts";
import { conformanceSuite } from "./conformance.ts";

conformanceSuite("workerd", (options) => startWorkerd(options));
