import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import ort from 'onnxruntime-node';
import { languageOfVoice, type Language } from '../domain/language.js';
import type { NeuralVoice, PiperScales } from '../domain/synthesis.js';
import { PiperVoiceConfigSchema, type PiperVoiceConfig } from '../schemas/voice.js';

/**
 * A Piper voice (a VITS model exported to ONNX, https://github.com/rhasspy/piper) on
 * onnxruntime-node's CPU provider: inputs `input` int64 [1, N] (phoneme ids), `input_lengths`
 * int64 [1], `scales` float32 [3] (noise_scale, length_scale, noise_w) and, for multi-speaker
 * voices, `sid` int64 [1]; output float32 audio at the config's sample rate ([1, 1, T] or
 * [1, 1, 1, T]).
 */

export interface PiperLoadOptions {
  /** Intra-op threads of the session. */
  readonly threads: number;
  /** Speak as this speaker of a multi-speaker voice (name or number); default speaker 0. */
  readonly speaker?: string;
}

export class PiperVoiceError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PiperVoiceError';
  }
}

/** `<voice>.onnx.json` beside `<voice>.onnx`. */
export function configPathOf(onnxPath: string): string {
  return `${onnxPath}.json`;
}

export async function readVoiceConfig(onnxPath: string): Promise<PiperVoiceConfig> {
  const path = configPathOf(onnxPath);
  let raw: string;
  try {
    raw = await readFile(path, 'utf8');
  } catch (error) {
    throw new PiperVoiceError(
      `the voice config ${path} cannot be read (a Piper voice is the .onnx and its .onnx.json)`,
      {
        cause: error,
      },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    throw new PiperVoiceError(`the voice config ${path} is not JSON`, { cause: error });
  }
  const parsed = PiperVoiceConfigSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new PiperVoiceError(
      `the voice config ${path} is not a Piper voice config: ${first?.path.join('.') ?? ''} ${first?.message ?? ''}`.trim(),
    );
  }
  if (parsed.data.phoneme_type !== 'espeak') {
    throw new PiperVoiceError(
      `the voice ${path} uses phoneme_type "${parsed.data.phoneme_type}"; only espeak-phonemized voices are supported`,
    );
  }
  return parsed.data;
}

export async function loadPiperVoice(onnxPath: string, options: PiperLoadOptions): Promise<PiperOnnxVoice> {
  const config = await readVoiceConfig(onnxPath);
  const language = languageOfVoice(config.language?.code ?? config.espeak.voice);
  if (language === undefined) {
    throw new PiperVoiceError(
      `the voice ${onnxPath} speaks ${config.language?.code ?? config.espeak.voice}, which this service does not offer (vi, en)`,
    );
  }
  let session: ort.InferenceSession;
  try {
    session = await ort.InferenceSession.create(onnxPath, {
      intraOpNumThreads: options.threads,
      interOpNumThreads: 1,
      graphOptimizationLevel: 'all',
      executionProviders: ['cpu'],
      logSeverityLevel: 3,
    });
  } catch (error) {
    throw new PiperVoiceError(
      `onnxruntime cannot load ${onnxPath}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const missing = ['input', 'input_lengths', 'scales'].filter((n) => !session.inputNames.includes(n));
  const output = session.outputNames[0];
  if (missing.length > 0 || output === undefined) {
    await session.release();
    throw new PiperVoiceError(
      `${onnxPath} is not a Piper voice: it lacks the input(s) ${missing.join(', ') || '(none)'}` +
        (output === undefined ? ' and has no output' : ''),
    );
  }
  const speakerId = resolveSpeaker(config, options.speaker);
  const needsSid = session.inputNames.includes('sid');
  return new PiperOnnxVoice(onnxPath, config, language, session, output, needsSid ? speakerId : undefined);
}

function resolveSpeaker(config: PiperVoiceConfig, speaker: string | undefined): number {
  if (speaker === undefined) return 0;
  const named = config.speaker_id_map[speaker];
  if (named !== undefined) return named;
  const n = Number(speaker);
  if (Number.isInteger(n) && n >= 0 && n < config.num_speakers) return n;
  throw new PiperVoiceError(`the voice has no speaker "${speaker}"`);
}

export class PiperOnnxVoice implements NeuralVoice {
  readonly id: string;
  readonly sampleRate: number;
  readonly espeakVoice: string;
  readonly phonemeIdMap: PiperVoiceConfig['phoneme_id_map'];
  readonly inference: PiperVoiceConfig['inference'];

  constructor(
    readonly path: string,
    readonly config: PiperVoiceConfig,
    readonly language: Language,
    private readonly session: ort.InferenceSession,
    private readonly outputName: string,
    private readonly speakerId: number | undefined,
  ) {
    this.id = basename(path).replace(/\.onnx$/i, '');
    this.sampleRate = config.audio.sample_rate;
    this.espeakVoice = config.espeak.voice;
    this.phonemeIdMap = config.phoneme_id_map;
    this.inference = config.inference;
  }

  async infer(ids: readonly number[], scales: PiperScales, signal: AbortSignal): Promise<Float32Array> {
    signal.throwIfAborted();
    const feeds: Record<string, ort.Tensor> = {
      input: new ort.Tensor(
        'int64',
        BigInt64Array.from(ids, (v) => BigInt(v)),
        [1, ids.length],
      ),
      input_lengths: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids.length)]), [1]),
      scales: new ort.Tensor(
        'float32',
        Float32Array.from([scales.noiseScale, scales.lengthScale, scales.noiseW]),
        [3],
      ),
    };
    if (this.speakerId !== undefined) {
      feeds['sid'] = new ort.Tensor('int64', BigInt64Array.from([BigInt(this.speakerId)]), [1]);
    }
    const outputs = await this.session.run(feeds);
    const out = outputs[this.outputName];
    if (out === undefined)
      throw new PiperVoiceError(`the voice ${this.id} gave no output ${this.outputName}`);
    // By type, not instanceof: the native addon's typed arrays may come from another realm.
    if (out.type !== 'float32')
      throw new PiperVoiceError(`the voice ${this.id} gave ${out.type} audio, float32 expected`);
    return out.data as Float32Array;
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
