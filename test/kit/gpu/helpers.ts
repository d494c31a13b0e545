import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CommandRunner } from '@clinicalsuite/kit/gpu';

const FIXTURES = new URL('../../fixtures/nvidia-smi/', import.meta.url);

export const fixturePath = (name: string): string => fileURLToPath(new URL(name, FIXTURES));
export const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');

export const DRIVER_FAILURE = fixture('driver-failure.txt');

/** An error shaped like the one `execFile` rejects with. */
export function execError(fields: Record<string, unknown>, message = 'Command failed'): Error {
  return Object.assign(new Error(message), fields);
}

/** A runner that answers each call with the next entry (the last one repeats) and records its calls. */
export function scriptedRunner(...answers: (string | Error)[]): CommandRunner & {
  calls: { file: string; args: readonly string[]; timeout: number }[];
} {
  const calls: { file: string; args: readonly string[]; timeout: number }[] = [];
  const runner = (file: string, args: readonly string[], { timeout }: { timeout: number }) => {
    calls.push({ file, args, timeout });
    const answer = answers[Math.min(calls.length, answers.length) - 1] ?? '';
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve({ stdout: answer });
  };
  return Object.assign(runner, { calls });
}

/** A clock the test moves by hand. */
export function manualClock(start = Date.parse('2025-01-15T10:00:00.000Z')): {
  now: () => number;
  advance: (ms: number) => void;
} {
  let time = start;
  return {
    now: () => time,
    advance: (ms) => {
      time += ms;
    },
  };
}
