// Prints the real-node run as a table: each step (a test, in order), whether it passed, and its
// time. Jest's own summary line follows it.
export default class TableReporter {
  constructor() {
    this.rows = [];
  }

  onTestResult(_test, result) {
    for (const t of result.testResults) {
      const reason = t.status === 'failed' ? firstLine(t.failureMessages[0] ?? '') : '';
      this.rows.push({ step: t.title, status: t.status, ms: t.duration ?? 0, reason });
    }
  }

  onRunComplete() {
    if (this.rows.length === 0) return;
    const width = Math.min(90, Math.max(...this.rows.map((r) => r.step.length)));
    const line = (step, status, time) => `${step.padEnd(width)}  ${status.padEnd(7)}  ${time.padStart(8)}`;
    const out = ['', line('step', 'result', 'time'), '-'.repeat(width + 19)];
    let total = 0;
    for (const r of this.rows) {
      total += r.ms;
      out.push(line(r.step.slice(0, width), r.status, `${(r.ms / 1000).toFixed(1)} s`));
      if (r.reason) out.push(`    ${r.reason.slice(0, width + 10)}`);
    }
    out.push('-'.repeat(width + 19), line('total', '', `${(total / 1000).toFixed(1)} s`), '');
    process.stdout.write(out.join('\n') + '\n');
  }
}

function firstLine(message) {
  // eslint-disable-next-line no-control-regex -- jest's failure messages carry ANSI colours
  const plain = message.replace(/\u001b\[[0-9;]*m/g, '');
  return (
    plain
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? ''
  );
}
