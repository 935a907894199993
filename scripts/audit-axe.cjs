// Runs axe-core (every rule but the experimental ones) in Debian's
// Chromium on each URL given, and prints every violation. Exit status 1
// if any. Used by scripts/audit, which installs puppeteer-core and axe-core
// into bin/audit and passes the session cookie of a signed-in user.
//
//   NODE_PATH=bin/audit/node_modules node scripts/audit-axe.cjs COOKIE URL...
const fs = require("fs");
const puppeteer = require("puppeteer-core");
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

(async () => {
  const [cookie, ...urls] = process.argv.slice(2);
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  let failures = 0;
  try {
    for (const url of urls) {
      const page = await browser.newPage();
      // The site's CSP allows no script; axe is injected by the audit, not the site.
      await page.setBypassCSP(true);
      const [name, value] = cookie.split("=");
      await page.setCookie({ name, value, url });
      for (const [width, height] of [[1280, 900], [390, 844]]) {
        await page.setViewport({ width, height });
        const resp = await page.goto(url, { waitUntil: "load" });
        if (!resp || resp.status() !== 200) {
          console.log(`axe: ${url} answered ${resp && resp.status()}`);
          failures++;
          continue;
        }
        await page.evaluate(axeSource);
        const result = await page.evaluate(() => axe.run(document, { resultTypes: ["violations"] }));
        const where = `${url} at ${width}px`;
        if (result.violations.length === 0) {
          console.log(`axe: ${where}: 0 violations (${result.passes.length} rules passed)`);
        }
        for (const v of result.violations) {
          failures++;
          console.log(`axe: ${where}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length} elements)`);
          for (const n of v.nodes.slice(0, 3)) console.log(`    ${n.target.join(" ")}: ${n.failureSummary.replace(/\n/g, " ")}`);
        }
      }
      await page.close();
    }
  } finally {
    await browser.close();
  }
  process.exit(failures ? 1 : 0);
})().catch((err) => {
  console.error("axe:", err);
  process.exit(2);
});
