/**
 * A tiny ONNX model with a Piper voice's exact signature, built here on the kit's ONNX writer
 * (@clinicalsuite/kit/onnx, as services/face/src/adapters/score-model.ts is): inputs `input` int64
 * [1, N], `input_lengths` int64 [1], `scales` float32 [3] and, for a multi-speaker voice, `sid`
 * int64 [1]; output `output` float32 [1, 1, T]. It is not a trained voice: it "speaks" a sine of
 * `frequencyHz` whose length is what a VITS duration model implies at its simplest,
 * T = floor(N * hopSamples * length_scale), so tests can check what the service feeds it and what
 * it does with the audio. Its `.onnx.json` is a Piper voice config with a phoneme map written here.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ELEM, encodeModel, type Attribute, type NodeSpec } from '@clinicalsuite/kit/onnx';

const { FLOAT, INT64 } = ELEM;

const node = (op: string, inputs: string[], outputs: string[], attributes: Attribute[] = []): NodeSpec => ({
  op,
  inputs,
  outputs,
  name: `${op}_${outputs[0] ?? ''}`,
  attributes,
});

export interface TinyPiperOptions {
  readonly hopSamples: number;
  readonly sampleRate: number;
  readonly frequencyHz: number;
  readonly multiSpeaker?: boolean;
}

export function tinyPiperModel(options: TinyPiperOptions): Uint8Array {
  const omega = (2 * Math.PI * options.frequencyHz) / options.sampleRate;
  return encodeModel({
    producer: 'clinicalsuite-test',
    graph: {
      name: 'tiny_piper',
      nodes: [
        node('Shape', ['input'], ['shape']),
        node('Gather', ['shape', 'one_i'], ['n']),
        node('Cast', ['n'], ['n_f'], [{ name: 'to', int: FLOAT }]),
        node('Gather', ['scales', 'one_i'], ['length_scale']),
        node('Mul', ['n_f', 'hop'], ['frames']),
        node('Mul', ['frames', 'length_scale'], ['samples_f']),
        node('Floor', ['samples_f'], ['samples']),
        node('Range', ['zero_f', 'samples', 'one_f'], ['t']),
        node('Mul', ['t', 'omega'], ['phase']),
        node('Sin', ['phase'], ['wave']),
        node('Mul', ['wave', 'amplitude'], ['audio']),
        node('Reshape', ['audio', 'out_shape'], ['output']),
      ],
      initializers: [
        { name: 'one_i', elemType: INT64, values: [1], dims: [] },
        { name: 'hop', elemType: FLOAT, values: [options.hopSamples], dims: [] },
        { name: 'zero_f', elemType: FLOAT, values: [0], dims: [] },
        { name: 'one_f', elemType: FLOAT, values: [1], dims: [] },
        { name: 'omega', elemType: FLOAT, values: [omega], dims: [] },
        { name: 'amplitude', elemType: FLOAT, values: [0.25], dims: [] },
        { name: 'out_shape', elemType: INT64, values: [1, 1, -1], dims: [3] },
      ],
      inputs: [
        { name: 'input', elemType: INT64, dims: [1, 'phonemes'] },
        { name: 'input_lengths', elemType: INT64, dims: [1] },
        { name: 'scales', elemType: FLOAT, dims: [3] },
        ...(options.multiSpeaker === true ? [{ name: 'sid', elemType: INT64, dims: [1] }] : []),
      ],
      outputs: [{ name: 'output', elemType: FLOAT, dims: [1, 1, 'time'] }],
    },
  });
}

/** Symbols of the test voice: pad, BOS, EOS, space, punctuation, letters, digits, IPA and marks. */
const SYMBOLS = [
  '_',
  '^',
  '$',
  ' ',
  ...Array.from("!'(),-.:;?"),
  ...Array.from('abcdefghijklmnopqrstuvwxyz0123456789'),
  ...Array.from('æçðøħŋœɐɑɒɓɔɕɖɗɘəɚɛɜɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʲˈˌːˑ˞βθχᵻⱱ'),
  // Combining marks as NFD leaves them: tilde, grave, acute, dot below, ring below, syllabic...
  '\u0300',
  '\u0301',
  '\u0303',
  '\u0306',
  '\u0308',
  '\u0323',
  '\u0325',
  '\u0329',
  '\u032a',
  '\u0361',
];

export const TINY_PHONEME_ID_MAP: Readonly<Record<string, number[]>> = Object.fromEntries(
  SYMBOLS.map((s, i) => [s, [i]]),
);

export interface TinyVoiceFiles {
  readonly onnx: string;
  readonly config: string;
}

/** Writes `<dir>/<name>.onnx` and `<name>.onnx.json`. */
export function writeTinyPiperVoice(
  dir: string,
  name: string,
  options: TinyPiperOptions & {
    readonly espeakVoice: string;
    readonly languageCode: string;
    readonly lengthScale?: number;
    /** Leave these symbols out of the map (to test phonemes the voice lacks). */
    readonly omit?: readonly string[];
  },
): TinyVoiceFiles {
  const onnx = join(dir, `${name}.onnx`);
  writeFileSync(onnx, tinyPiperModel(options));
  const map = Object.fromEntries(
    Object.entries(TINY_PHONEME_ID_MAP).filter(([s]) => !(options.omit ?? []).includes(s)),
  );
  const config = {
    audio: { sample_rate: options.sampleRate, quality: 'x_low' },
    espeak: { voice: options.espeakVoice },
    inference: { noise_scale: 0.667, length_scale: options.lengthScale ?? 1, noise_w: 0.8 },
    phoneme_type: 'espeak',
    phoneme_map: {},
    phoneme_id_map: map,
    num_symbols: SYMBOLS.length,
    num_speakers: options.multiSpeaker === true ? 3 : 1,
    speaker_id_map: options.multiSpeaker === true ? { a: 0, b: 1, c: 2 } : {},
    language: { code: options.languageCode },
    dataset: 'tiny-test',
  };
  writeFileSync(`${onnx}.json`, JSON.stringify(config, null, 2));
  return { onnx, config: `${onnx}.json` };
}
