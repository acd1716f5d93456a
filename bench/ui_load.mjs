// bench/ui_bench.py's browser: playwright-core (ui/node_modules) driving Debian's Chromium, one
// browser. One JSON argument {mode, url, token, spki, chromium, ui, paths, loads, seconds}:
//   mode "load": for each path, `loads` fresh page loads (a new page each, the HTTP cache kept as a
//     browser keeps it); prints per load the milliseconds from navigation start to DOMContentLoaded,
//     to the load event, and to the page's first render with data (body[data-ready]), and when each
//     request (the page, its assets, its views) started and ended.
//   mode "open": opens paths[0], prints "OPEN" once it rendered, keeps it open (polling) for
//     `seconds`, prints "CLOSED" and exits.
import { createRequire } from "node:module";
import { join } from "node:path";

const args = JSON.parse(process.argv[2]);
const require = createRequire(join(args.ui, "package.json"));
const { chromium } = require("playwright-core");
// The node's serving certificate is trusted by its key (args.spki, as a browser told to trust the
// node's CA would): a certificate error would keep Chromium from caching anything.
const browser = await chromium.launch({ executablePath: args.chromium, headless: true,
  args: ["--no-sandbox", `--ignore-certificate-errors-spki-list=${args.spki}`] });
const context = await browser.newContext({ extraHTTPHeaders: { Authorization: `Bearer ${args.token}` } });
try {
  if (args.mode === "load") {
    const out = {};
    for (const path of args.paths) {
      out[path] = [];
      for (let i = 0; i < args.loads; i++) {
        const page = await context.newPage();
        await page.goto(`${args.url}${path}`);
        await page.waitForSelector("body[data-ready]");
        out[path].push(await page.evaluate(() => {
          const nav = performance.getEntriesByType("navigation")[0];
          // where the time goes: when each request started and ended (ms from navigation start)
          const steps = { page: [nav.requestStart, nav.responseEnd], "page first byte": [nav.responseStart, nav.responseStart] };
          for (const r of performance.getEntriesByType("resource")) {
            const name = new URL(r.name).pathname.replace(/^.*\/ui\/(api\/)?/, "").replace(/^pods\/.*/, "pod");
            steps[name] = [r.startTime, r.responseEnd, r.transferSize];
          }
          for (const m of performance.getEntriesByType("mark")) steps[m.name] = [m.startTime, m.startTime];
          return { dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd, ready: window.kubeletapiReadyAt, steps };
        }));
        await page.close();
      }
    }
    console.log(JSON.stringify(out));
  } else {
    const page = await context.newPage();
    await page.goto(`${args.url}${args.paths[0]}`);
    await page.waitForSelector("body[data-ready]");
    console.log("OPEN");
    await page.waitForTimeout(args.seconds * 1000);
    console.log(`CLOSED ${await page.evaluate(() => window.kubeletapiPolls || 0)}`);
  }
} finally {
  await browser.close();
}
