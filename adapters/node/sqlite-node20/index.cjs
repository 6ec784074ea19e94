// Resolved from this folder, so better-sqlite3 is found wherever npm placed it for this package.
module.exports = {
  Database: require("better-sqlite3"),
  version: require("better-sqlite3/package.json").version,
};
