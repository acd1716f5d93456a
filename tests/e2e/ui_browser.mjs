// The web UI in a real browser: playwright-core (ui/node_modules, npm ci) drives Debian's Chromium
// (no browser download) against a running agent, in ONE browser session. Run by
// tests/e2e/test_ui_browser.py with one JSON argument:
//   {secure, readOnly, token, chromium, out, node, runner, crasher, waiter}
// It performs the page actions and prints one JSON object of what it observed (the test asserts on
// it); screenshots go to `out`. A step that cannot run at all throws (exit 1, the error on stderr).
import { createRequire } from "node:module";
import { join } from "node:path";

const args = JSON.parse(process.argv[2]);
const require = createRequire(join(args.ui, "package.json"));
const { chromium } = require("playwright-core");

const observed = { screenshots: [] };
const browser = await chromium.launch({ executablePath: args.chromium, args: ["--no-sandbox"], headless: true });
const shot = async (page, name) => {
  const path = join(args.out, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  observed.screenshots.push(path);
};
// Every text element's colour against the first opaque background up its ancestors (WCAG ratio).
const contrastProblems = (page) => page.evaluate(() => {
  const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const background = (node) => {
    for (let n = node; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c;
    }
    return [255, 255, 255];
  };
  const problems = [];
  for (const node of document.querySelectorAll("body *")) {
    const own = [...node.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
    if (!own || !node.getClientRects().length || node.closest(".uplot")) continue;
    const a = lum(rgb(getComputedStyle(node).color));
    const b = lum(background(node));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) problems.push(`${node.tagName}.${node.className}: ${ratio.toFixed(2)} "${node.textContent.trim().slice(0, 30)}"`);
  }
  return problems;
});
const unlabelled = (page) => page.evaluate(() => [...document.querySelectorAll("input, select, textarea")]
  .filter((i) => !(i.labels && i.labels.length) && !i.getAttribute("aria-label")).map((i) => i.id || i.outerHTML));
const chartsDrawn = (page) => page.evaluate(() => Object.fromEntries(Object.entries(window.kubeletapiCharts).map(([k, u]) => {
  const points = u.data[1].filter((v) => v !== null).length;
  const canvas = u.root.querySelector("canvas");
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let inked = 0;
  for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) inked++;
  return [k, { samples: u.data[0].length, points, inked }];
})));
const rows = (page) => page.$$eval("#pods-table tbody tr", (trs) => trs.map((tr) => {
  const cells = [...tr.children];
  return { pod: tr.dataset.pod, restarts: Number(cells[4].textContent), cpu: cells[5].dataset.value,
    memory: cells[6].dataset.value };
}));

try {
  // --- secure port: node page -------------------------------------------------------------------
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1300, height: 900 },
    extraHTTPHeaders: { Authorization: `Bearer ${args.token}` } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const started = Date.now();
  await page.goto(`${args.secure}/ui/`);
  await page.waitForSelector("body[data-ready]");
  observed.nodeLoadMs = Date.now() - started;
  await page.waitForFunction(() => Object.values(window.kubeletapiCharts).every((u) => u.data[1].filter((v) => v !== null).length >= 2),
    null, { timeout: 20000 }).catch(() => {});
  await page.evaluate(() => window.kubeletapiRefresh());
  observed.nodeCharts = await chartsDrawn(page);
  // The table against /stats/summary and /pods read around one refresh, in one housekeeping cycle.
  for (let attempt = 0; attempt < 20 && !observed.sameCycle; attempt++) {
    const got = await page.evaluate(async () => {
      const before = await (await fetch("/stats/summary")).text();
      const pods = await (await fetch("/pods")).json();
      // The views share one PodList for 0.25 s (server/routes/ui.py TTL_S): let one built before go.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await window.kubeletapiRefresh();
      const after = await (await fetch("/stats/summary")).text();
      const podsAfter = await (await fetch("/pods")).json();
      return before === after && JSON.stringify(pods) === JSON.stringify(podsAfter) ? { summary: JSON.parse(before), pods } : null;
    });
    if (got) observed.sameCycle = { ...got, rows: await rows(page) };
  }
  observed.a11y = { unlabelled: await unlabelled(page), contrast: await contrastProblems(page) };
  await shot(page, "node");
  // Keyboard: Tab from the top reaches the filter; typing filters; a sort button sorts by Enter.
  await page.keyboard.press("Tab");
  observed.firstTab = await page.evaluate(() => document.activeElement.textContent);
  let tabs = 0;
  while (tabs < 40 && (await page.evaluate(() => document.activeElement.id)) !== "pod-filter") {
    await page.keyboard.press("Tab");
    tabs++;
  }
  observed.filterReachedByTab = tabs < 40;
  await page.keyboard.type("crash");
  observed.filtered = (await rows(page)).map((r) => r.pod);
  await shot(page, "node-filtered");
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Backspace");
  observed.unfiltered = (await rows(page)).length;
  await page.focus('button[data-sort="restarts"]');
  await page.keyboard.press("Enter");
  await page.keyboard.press("Enter");
  observed.sortedByRestartsDesc = (await rows(page)).map((r) => [r.pod, r.restarts]);
  observed.sortAttr = await page.getAttribute('th:has(button[data-sort="restarts"])', "aria-sort");
  // Keyboard to a pod link, Enter opens its page.
  await page.focus(`tr[data-pod="default/${args.runner}"] a`);
  await page.keyboard.press("Enter");
  await page.waitForURL(`**/ui/pods/default/${args.runner}`);
  await page.waitForSelector("body[data-ready]");

  // --- the runner's page: charts, logs tail, follow, search -------------------------------------
  await page.waitForFunction(() => document.querySelectorAll("#log-output .log-line").length > 0, null, { timeout: 10000 });
  observed.podCharts = await chartsDrawn(page);
  observed.podA11y = { unlabelled: await unlabelled(page), contrast: await contrastProblems(page) };
  observed.tailLines = await page.$$eval("#log-output .log-line", (l) => l.map((x) => x.textContent));
  await page.check("#log-follow");
  await page.waitForFunction(() => document.querySelectorAll("#log-output .log-line").length > 0, null, { timeout: 10000 });
  const firstFollowed = await page.$$eval("#log-output .log-line", (l) => l.map((x) => x.textContent));
  await page.waitForFunction((n) => document.querySelectorAll("#log-output .log-line").length > n, firstFollowed.length,
    { timeout: 10000 });
  observed.followed = { before: firstFollowed, after: await page.$$eval("#log-output .log-line", (l) => l.map((x) => x.textContent)) };
  const last = observed.followed.after[observed.followed.after.length - 1];
  await page.fill("#log-search", last);
  observed.search = { needle: last, shown: await page.$$eval("#log-output .log-line", (l) => l.map((x) => x.textContent)),
    marks: await page.$$eval("#log-output mark", (m) => m.length), count: await page.textContent("#log-count") };
  await shot(page, "pod-runner");

  // --- the crash-looper's page, a container page, the 404 page ------------------------------------
  await page.goto(`${args.secure}/ui/pods/default/${args.crasher}/crash`);
  await page.waitForSelector("body[data-ready]");
  observed.crasher = { restartsCard: await page.textContent("#card-restarts .value"),
    state: await page.textContent('tr[data-container="crash"] td:nth-child(3)'),
    selected: await page.inputValue("#log-container"),
    events: await page.$$eval("#events tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent))) };
  await shot(page, "pod-crasher");
  // A pod whose container has not run yet (its init container sleeps): "no samples yet", no frame.
  await page.goto(`${args.secure}/ui/pods/default/${args.waiter}`);
  await page.waitForSelector("body[data-ready]");
  observed.waiter = await page.evaluate(() => ({
    empty: [...document.querySelectorAll("figure[data-empty]")].map((f) => [f.dataset.chart, f.querySelector("p").textContent,
      f.querySelectorAll("canvas").length]),
    charts: Object.keys(window.kubeletapiCharts) }));
  await shot(page, "pod-waiter");
  // The same pages under the API server's node proxy path: assets, views, logs and links stay below it.
  const proxied = `${args.secure}/api/v1/nodes/${args.node}/proxy/ui/`;
  await page.goto(`${proxied}pods/default/${args.crasher}`);
  await page.waitForSelector("body[data-ready]");
  await page.evaluate(() => window.kubeletapiRefresh()); // the views, fetched relative to the root
  await page.waitForFunction(() => document.querySelectorAll("#log-output .log-line").length > 0, null, { timeout: 10000 });
  observed.proxied = { back: await page.$eval("main a", (a) => a.href), logs: await page.$$eval("#log-output .log-line",
    (l) => l.map((x) => x.textContent)), events: await page.$$eval("#events tbody tr", (trs) => trs.length) };
  await page.click("main a"); // back to the node page, still under the proxy path
  await page.waitForSelector("body[data-ready]");
  observed.proxied.node = { url: page.url(), rows: (await rows(page)).length };
  const missing = await page.goto(`${args.secure}/ui/pods/default/nope`);
  observed.notFound = { status: missing.status(), text: await page.textContent("main") };
  await shot(page, "not-found");
  observed.errors = errors;

  // --- the read-only port (same browser): views without logs ------------------------------------
  const plain = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const ro = await plain.newPage();
  await ro.goto(`${args.readOnly}/ui/pods/default/${args.runner}`);
  await ro.waitForSelector("body[data-ready]");
  observed.readOnly = { logsText: await ro.textContent("#logs-disabled"), logInputs: await ro.$$eval("#log-output", (l) => l.length) };
  await shot(ro, "read-only-pod");
} finally {
  await browser.close();
}
console.log(JSON.stringify(observed));
