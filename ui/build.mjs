// Builds the web UI's assets into the directory given (make ui: kubeletapi/server/ui/):
// ui.js = uPlot's IIFE build (from node_modules, pinned by package-lock.json) + src/app.js,
// ui.css = uPlot's style sheet + src/style.css, index.html as is. No bundler: three files joined.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node ui/build.mjs <output directory>");
  process.exit(1);
}
const read = (...parts) => readFileSync(join(here, ...parts), "utf8");
const uplot = join("node_modules", "uplot", "dist");
const version = JSON.parse(read("node_modules", "uplot", "package.json")).version;

mkdirSync(out, { recursive: true });
writeFileSync(join(out, "ui.js"),
  `/* uPlot ${version} (MIT, https://github.com/leeoniya/uPlot) */\n${read(uplot, "uPlot.iife.min.js")}\n` +
  `/* kubeletapi web UI */\n${read("src", "app.js")}`);
writeFileSync(join(out, "ui.css"), `${read(uplot, "uPlot.min.css")}\n${read("src", "style.css")}`);
writeFileSync(join(out, "index.html"), read("src", "index.html"));
console.log(`web UI built into ${out} (uPlot ${version})`);
