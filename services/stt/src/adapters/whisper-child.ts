/**
 * The program each whisper.cpp child process runs (CommonJS, started with `node -e`) and the
 * messages it exchanges with the service over IPC. A string rather than a module of its own so the
 * same code runs from the built service and from the sources under test.
 */
import type { RawWhisperSegment } from '../domain/whisper-model.js';

/** The child's program (CommonJS, run with `node -e`): loads the binding and the model, then serves. */
export const CHILD_SOURCE = String.raw`'use strict';
const send = (m) => { if (process.connected) process.send(m); };
process.on('disconnect', () => process.exit(0));
let binding;
try {
  binding = require(process.env.STT_WHISPER_BINDING);
} catch (e) {
  send({ type: 'load_failed', stage: 'binding', message: String((e && e.message) || e) });
  process.exit(4);
}
(async () => {
  let ctx;
  try {
    ctx = new binding.WhisperContext({
      filePath: process.env.STT_WHISPER_MODEL_FILE,
      useGpu: process.env.STT_WHISPER_USE_GPU === '1',
      useFlashAttn: false,
    });
    if (ctx && typeof ctx.then === 'function') ctx = await ctx;
  } catch (e) {
    send({ type: 'load_failed', stage: 'model', message: String((e && e.message) || e) });
    process.exit(3);
  }
  process.on('message', async (m) => {
    if (!m || m.type !== 'transcribe') return;
    try {
      const pcm = m.pcm;
      const audio = pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength);
      const { promise } = ctx.transcribeData(audio, { language: m.language, maxThreads: m.threads });
      const r = await promise;
      const segments = (r.segments || []).map((s) => ({ text: String(s.text), t0: Number(s.t0), t1: Number(s.t1) }));
      send({ type: 'result', id: m.id, language: r.language || null, segments });
    } catch (e) {
      send({ type: 'failed', id: m.id, message: String((e && e.message) || e) });
    }
  });
  send({ type: 'ready' });
})();
`;

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'load_failed'; stage: 'binding' | 'model'; message: string }
  | { type: 'result'; id: number; language: string | null; segments: RawWhisperSegment[] }
  | { type: 'failed'; id: number; message: string };
