import { startWorkerd } from "../harness/workerd.ts";
import { scenarioSuite } from "./suite.ts";

// The Worker answers any Host header (remote access is its normal mode), so the Host check is not expected there.
scenarioSuite("workerd", (options) => startWorkerd(options), { checksHost: false });
