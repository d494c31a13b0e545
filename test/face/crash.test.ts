/** @jest-environment ./test/face/ort-environment.cjs */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { freePort } from '../kit/helpers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import type { FacePhoto } from '../fixtures/photos/face-photos.js';
import { ensureFaceFixtures, form } from './helpers.js';

// The built service as a real process, killed with SIGKILL while registrations are being written:
// every person registered before survives, and no person is left half-written (a batch of three
// photos is stored whole or not at all). `npm test` builds services/face/dist first.

const main = new URL('../../services/face/dist/main.js', import.meta.url).pathname;
let photos: Record<FacePhoto, string>;
let child: ChildProcess | undefined;

beforeAll(async () => {
  photos = await ensureFaceFixtures();
}, 180_000);
afterEach(() => {
  child?.kill('SIGKILL');
});

async function startService(dataDir: string): Promise<string> {
  const port = await freePort();
  child = spawn(process.execPath, [main], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      FACE_DEVICE: 'cpu',
      FACE_THREADS: '1',
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      // What is tested here is the process, not its auth (test/security/auth.test.ts).
      AUTH_DISABLED: 'true',
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  const url = `http://127.0.0.1:${String(port)}`;
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${url}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return url;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the face service did not become healthy');
}

const listed = async (url: string) =>
  (
    (await (await fetch(`${url}/list_persons`)).json()) as {
      data: { persons: { name: string; embeddings: number }[] };
    }
  ).data.persons;

describe('a face service killed mid-registration', () => {
  it('loses no registered person and leaves no half person', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'face-crash-'));
    let url = await startService(dataDir);
    const first = await fetch(`${url}/register_person`, {
      method: 'POST',
      body: form({ person_name: 'Registered Before' }, [{ field: 'file', path: photos.obama }]),
    });
    expect(first.status).toBe(200);

    const outcomes: (number | string)[] = [];
    // The kill lands at once, or just after the first batch of the round was acknowledged (then
    // the others are still in flight however slow the machine is).
    for (const [round, afterFirstAckMs] of [
      [0, null],
      [1, 0],
      [2, 80],
    ] as const) {
      // Batches of three one-face photos, several in flight, then SIGKILL.
      const inFlight = Array.from({ length: 6 }, (_, i) =>
        fetch(`${url}/register_batch`, {
          method: 'POST',
          body: form({ person_name: `Batch ${String(round)}-${String(i)}` }, [
            { field: 'files', path: photos.obama2 },
            { field: 'files', path: photos.obama3 },
            { field: 'files', path: photos.single },
          ]),
        }).then(
          (r) => r.status,
          () => 'killed',
        ),
      );
      if (afterFirstAckMs === null) await new Promise((r) => setTimeout(r, 150));
      else {
        await Promise.race(
          inFlight.map((p) => p.then((s) => (s === 200 ? s : new Promise(() => undefined)))),
        );
        await new Promise((r) => setTimeout(r, afterFirstAckMs));
      }
      child?.kill('SIGKILL');
      const statuses = await Promise.all(inFlight);
      outcomes.push(...statuses);
      expect(statuses.every((s) => s === 200 || s === 'killed' || s === 503)).toBe(true);
      await new Promise<void>((resolve) => {
        if (child?.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('exit', () => resolve());
      });

      url = await startService(dataDir);
      const persons = await listed(url);
      expect(persons.find((p) => p.name === 'Registered Before')).toMatchObject({ embeddings: 1 });
      for (const p of persons.filter((q) => q.name.startsWith('Batch'))) expect(p.embeddings).toBe(3);
      // Every acknowledged batch is there.
      statuses.forEach((s, i) => {
        if (s === 200) expect(persons.map((p) => p.name)).toContain(`Batch ${String(round)}-${String(i)}`);
      });
    }
    // The kills did land mid-work: some batches were cut off, and some were acknowledged.
    expect(outcomes).toContain('killed');
    expect(outcomes).toContain(200);
    child?.kill('SIGKILL');
    const db = new Database(join(dataDir, 'face-registry.sqlite'), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(
      db
        .prepare('SELECT count(*) AS n FROM embeddings WHERE person_id NOT IN (SELECT id FROM persons)')
        .get(),
    ).toEqual({ n: 0 });
    db.close();
  }, 120_000);
});
