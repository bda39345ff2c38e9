// Run the JS unit tests (test/<family>/*.test.ts) with node's built-in test runner.
// esbuild compiles each test file (with the src modules it imports) to a
// temporary directory first, so no TypeScript loader is needed at run time.
import * as esbuild from "esbuild";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const testDir = join(root, "test");
/** Files under `dir` (paths relative to it) whose names end with `suffix`. */
function walk(dir, suffix, prefix = "") {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? join(prefix, entry.name) : entry.name;
    if (entry.isDirectory()) return walk(dir, suffix, path);
    return entry.name.endsWith(suffix) ? [path] : [];
  });
}

// One folder per view family (test/core, test/attention, ...), as in src/.
const tests = walk(testDir, ".test.ts").sort();
if (tests.length === 0) {
  console.error("no test/**/*.test.ts files found");
  process.exit(1);
}
const outdir = mkdtempSync(join(tmpdir(), "attnwidget-js-test-"));
try {
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: tests.map((name) => join("test", name)),
    outdir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    format: "esm",
    platform: "node",
    target: ["node18"],
    loader: { ".css": "text" },
    logLevel: "warning",
  });
  const files = walk(outdir, ".mjs").map((name) => join(outdir, name));
  const result = spawnSync(process.execPath, ["--test", "--test-reporter=spec", ...files], { stdio: "inherit" });
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
