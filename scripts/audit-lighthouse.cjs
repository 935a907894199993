// Prints a Lighthouse JSON report's category scores and every audit that
// failed (a scored audit below 1), and exits 1 if any failed. Audits that
// are informative, manual or not applicable have no pass/fail.
//
//   node scripts/audit-lighthouse.cjs REPORT.json
const report = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const url = report.finalDisplayedUrl || report.finalUrl;
const scores = Object.values(report.categories).map((c) => `${c.title} ${Math.round(c.score * 100)}`);
console.log(`lighthouse: ${url}: ${scores.join(", ")}`);
let failed = 0;
for (const cat of Object.values(report.categories)) {
  for (const ref of cat.auditRefs) {
    const a = report.audits[ref.id];
    if (!["binary", "numeric", "metricSavings"].includes(a.scoreDisplayMode) || a.score === null || a.score >= 1) continue;
    failed++;
    console.log(`lighthouse: ${url}: FAILED ${cat.title} / ${a.id}: ${a.title}${a.displayValue ? " (" + a.displayValue + ")" : ""}`);
  }
}
if (report.runtimeError) {
  console.log(`lighthouse: ${url}: runtime error ${report.runtimeError.code}: ${report.runtimeError.message}`);
  failed++;
}
process.exit(failed ? 1 : 0);
