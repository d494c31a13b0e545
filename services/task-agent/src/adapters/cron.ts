import { Cron } from 'croner';
import type { NextRun } from '../store/types.js';

/**
 * Cron expressions through croner: five fields (minute hour day month weekday) or six with seconds
 * first, read in an IANA time zone (daylight-saving changes handled by croner).
 */

/** The next firing strictly after `after`, or null when the expression never fires again. */
export const nextRun: NextRun = (cron, timezone, after) => {
  const job = new Cron(cron, { timezone, paused: true, mode: '5-or-6-parts' });
  try {
    return job.nextRun(after);
  } finally {
    job.stop();
  }
};

/** Why an expression or zone is refused (for a 422), or undefined when both are fine. */
export function cronProblem(cron: string, timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    return `"${timezone}" is not an IANA time zone`;
  }
  try {
    const next = nextRun(cron, timezone, new Date());
    if (next === null) return `"${cron}" never fires`;
  } catch (error) {
    return `"${cron}" is not a cron expression: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}
