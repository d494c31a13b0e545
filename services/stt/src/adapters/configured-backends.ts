import { basename } from 'node:path';
import { childLimits, type Logger } from '@clinicalsuite/kit';
import { DEBIAN_POCKETSPHINX_MODEL_DIR, type SttConfig } from '../config.js';
import { PocketsphinxBackend } from './pocketsphinx.js';
import { WhisperBackend } from './whisper.js';

/** The backends as the configuration sets them up. */

export interface BackendHooks {
  readonly logger: Logger;
  /** A backend became ready or failed. */
  readonly onChange: () => void;
  /** A request got a pocketsphinx process that was already loaded (`warm`) or had to start one. */
  readonly onProcess: (start: 'warm' | 'cold') => void;
}

export function pocketsphinxBackend(config: SttConfig, hooks: BackendHooks): PocketsphinxBackend {
  return new PocketsphinxBackend({
    binary: config.POCKETSPHINX_PATH,
    hmm: config.POCKETSPHINX_HMM,
    lm: config.POCKETSPHINX_LM,
    dict: config.POCKETSPHINX_DICT,
    warm: config.pocketsphinxWarm,
    timeoutMs: config.STT_RECOGNIZE_TIMEOUT_MS,
    limits: childLimits(config),
    logger: hooks.logger,
    modelName: config.POCKETSPHINX_HMM.startsWith(DEBIAN_POCKETSPHINX_MODEL_DIR)
      ? 'cmusphinx en-us (Debian pocketsphinx-en-us)'
      : basename(config.POCKETSPHINX_HMM),
    onProcess: hooks.onProcess,
    onChange: hooks.onChange,
  });
}

export function whisperBackend(config: SttConfig, modelPath: string, hooks: BackendHooks): WhisperBackend {
  return new WhisperBackend({
    modelPath,
    threads: config.whisperThreads,
    processes: config.STT_WHISPER_PROCESSES,
    gpu: config.STT_WHISPER_GPU,
    timeoutMs: config.STT_RECOGNIZE_TIMEOUT_MS,
    pollMs: config.MODEL_POLL_MS,
    logger: hooks.logger,
    onChange: hooks.onChange,
  });
}
