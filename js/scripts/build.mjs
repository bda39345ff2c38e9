// Bundle js/src/index.ts into ONE self-contained ES module:
// attnwidget/static/widget.js (what the Python widgets load as `_esm`).
//
//   node scripts/build.mjs           production build (minified)
//   node scripts/build.mjs --watch   rebuild on change (unminified, inline
//                                    source map); with ANYWIDGET_HMR=1 in the
//                                    kernel's environment open widgets reload.
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";

const watch = process.argv.includes("--watch");
const root = fileURLToPath(new URL("..", import.meta.url));

/** @type {import("esbuild").BuildOptions} */
const options = {
  absWorkingDir: root,
  entryPoints: ["src/index.ts"],
  outfile: "../attnwidget/static/widget.js",
  bundle: true, // every dependency inside: no CDN, no fetch at run time
  format: "esm",
  platform: "browser",
  target: ["es2020"],
  loader: { ".css": "text" }, // styles ship inside the bundle as a string
  minify: !watch,
  sourcemap: watch ? "inline" : false,
  legalComments: "none",
  logLevel: "info",
};

if (watch) {
  const context = await esbuild.context(options);
  await context.watch();
} else {
  await esbuild.build(options);
}
