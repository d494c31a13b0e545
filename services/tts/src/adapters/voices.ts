import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Language } from '../domain/language.js';
import { configPathOf, loadPiperVoice, type PiperOnnxVoice } from './piper.js';

/**
 * Finds the Piper voices to load: the paths named per language (TTS_VOICE_VI, TTS_VOICE_EN), the
 * model the suite gives (MODEL_PATH), then every `<voice>.onnx` with its `.onnx.json` in the
 * voices directory, in name order; the first voice of each language wins. A voice that cannot be
 * loaded is reported and skipped: its language is spoken by espeak-ng.
 */

export interface VoiceSources {
  readonly explicit: Partial<Record<Language, string>>;
  readonly modelPath?: string;
  readonly dir: string;
  readonly threads: number;
}

export interface LoadedVoices {
  readonly voices: Map<Language, PiperOnnxVoice>;
  /** Voices found but not used, and why (for /status and the logs). */
  readonly problems: string[];
}

async function exists(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function scan(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const onnx = names.filter((n) => n.toLowerCase().endsWith('.onnx')).sort();
  const found: string[] = [];
  for (const name of onnx) {
    const path = join(dir, name);
    if ((await exists(path)) && (await exists(configPathOf(path)))) found.push(path);
  }
  return found;
}

export async function loadVoices(sources: VoiceSources): Promise<LoadedVoices> {
  const voices = new Map<Language, PiperOnnxVoice>();
  const problems: string[] = [];
  // One session per file, whichever candidates name it.
  const opened = new Map<string, PiperOnnxVoice | undefined>();
  const candidates: { path: string; wanted?: Language; origin: string }[] = [];
  for (const [language, path] of Object.entries(sources.explicit) as [Language, string][]) {
    candidates.push({ path, wanted: language, origin: `TTS_VOICE_${language.toUpperCase()}` });
  }
  if (sources.modelPath !== undefined) candidates.push({ path: sources.modelPath, origin: 'MODEL_PATH' });
  for (const path of await scan(sources.dir)) candidates.push({ path, origin: sources.dir });

  for (const { path, wanted, origin } of candidates) {
    const key = resolve(path);
    if (!opened.has(key)) {
      if (wanted === undefined && !(await exists(path))) {
        problems.push(`${origin}: ${path} does not exist`);
        opened.set(key, undefined);
        continue;
      }
      try {
        opened.set(key, await loadPiperVoice(path, { threads: sources.threads }));
      } catch (error) {
        problems.push(`${origin}: ${error instanceof Error ? error.message : String(error)}`);
        opened.set(key, undefined);
        continue;
      }
    }
    const voice = opened.get(key);
    if (voice === undefined) continue;
    if (wanted !== undefined && voice.language !== wanted) {
      problems.push(`${origin}: ${path} speaks ${voice.language}, not ${wanted}`);
      continue;
    }
    // The first voice of a language wins.
    if (!voices.has(voice.language)) voices.set(voice.language, voice);
  }
  const used = new Set(voices.values());
  for (const voice of opened.values()) if (voice !== undefined && !used.has(voice)) await voice.dispose();
  return { voices, problems };
}
