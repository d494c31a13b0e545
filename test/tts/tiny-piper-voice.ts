/**
 * A tiny ONNX model with a Piper voice's exact signature, written here byte by byte (protobuf
 * encoded by hand, as services/face/src/adapters/score-model.ts does): inputs `input` int64
 * [1, N], `input_lengths` int64 [1], `scales` float32 [3] and, for a multi-speaker voice, `sid`
 * int64 [1]; output `output` float32 [1, 1, T]. It is not a trained voice: it "speaks" a sine of
 * `frequencyHz` whose length is what a VITS duration model implies at its simplest,
 * T = floor(N * hopSamples * length_scale), so tests can check what the service feeds it and what
 * it does with the audio. Its `.onnx.json` is a Piper voice config with a phoneme map written here.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const FLOAT = 1;
const INT64 = 7;

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
const int = (field: number, value: number): number[] => [...varint(field << 3), ...varint(value)];
function bytes(field: number, value: number[] | string | Uint8Array): number[] {
  const data = typeof value === 'string' ? [...Buffer.from(value, 'utf8')] : [...value];
  return [...varint((field << 3) | 2), ...varint(data.length), ...data];
}

function valueInfo(name: string, elemType: number, dims: (number | string)[]): number[] {
  const shape = dims.flatMap((d) => bytes(1, typeof d === 'number' ? int(1, d) : bytes(2, d)));
  const tensorType = [...int(1, elemType), ...bytes(2, shape)];
  return [...bytes(1, name), ...bytes(2, bytes(1, tensorType))];
}

/** A constant tensor (raw little-endian data); `dims` empty for a scalar. */
function initializer(name: string, type: number, values: number[], dims: number[]): number[] {
  const raw = Buffer.alloc(values.length * (type === INT64 ? 8 : 4));
  values.forEach((v, i) => {
    if (type === INT64) raw.writeBigInt64LE(BigInt(v), i * 8);
    else raw.writeFloatLE(v, i * 4);
  });
  return [...dims.flatMap((d) => int(1, d)), ...int(2, type), ...bytes(8, name), ...bytes(9, raw)];
}

function node(op: string, inputs: string[], outputs: string[], attrs: number[][] = []): number[] {
  return [
    ...inputs.flatMap((i) => bytes(1, i)),
    ...outputs.flatMap((o) => bytes(2, o)),
    ...bytes(3, `${op}_${outputs[0] ?? ''}`),
    ...bytes(4, op),
    ...attrs.flatMap((a) => bytes(5, a)),
  ];
}
/** An INT attribute (AttributeProto type 2). */
const intAttr = (name: string, value: number): number[] => [
  ...bytes(1, name),
  ...int(3, value),
  ...int(20, 2),
];

export interface TinyPiperOptions {
  readonly hopSamples: number;
  readonly sampleRate: number;
  readonly frequencyHz: number;
  readonly multiSpeaker?: boolean;
}

export function tinyPiperModel(options: TinyPiperOptions): Uint8Array {
  const omega = (2 * Math.PI * options.frequencyHz) / options.sampleRate;
  const nodes = [
    node('Shape', ['input'], ['shape']),
    node('Gather', ['shape', 'one_i'], ['n']),
    node('Cast', ['n'], ['n_f'], [intAttr('to', FLOAT)]),
    node('Gather', ['scales', 'one_i'], ['length_scale']),
    node('Mul', ['n_f', 'hop'], ['frames']),
    node('Mul', ['frames', 'length_scale'], ['samples_f']),
    node('Floor', ['samples_f'], ['samples']),
    node('Range', ['zero_f', 'samples', 'one_f'], ['t']),
    node('Mul', ['t', 'omega'], ['phase']),
    node('Sin', ['phase'], ['wave']),
    node('Mul', ['wave', 'amplitude'], ['audio']),
    node('Reshape', ['audio', 'out_shape'], ['output']),
  ];
  const inits = [
    initializer('one_i', INT64, [1], []),
    initializer('hop', FLOAT, [options.hopSamples], []),
    initializer('zero_f', FLOAT, [0], []),
    initializer('one_f', FLOAT, [1], []),
    initializer('omega', FLOAT, [omega], []),
    initializer('amplitude', FLOAT, [0.25], []),
    initializer('out_shape', INT64, [1, 1, -1], [3]),
  ];
  const inputs = [
    valueInfo('input', INT64, [1, 'phonemes']),
    valueInfo('input_lengths', INT64, [1]),
    valueInfo('scales', FLOAT, [3]),
    ...(options.multiSpeaker === true ? [valueInfo('sid', INT64, [1])] : []),
  ];
  const graph = [
    ...nodes.flatMap((n) => bytes(1, n)),
    ...bytes(2, 'tiny_piper'),
    ...inits.flatMap((t) => bytes(5, t)),
    ...inputs.flatMap((i) => bytes(11, i)),
    ...bytes(12, valueInfo('output', FLOAT, [1, 1, 'time'])),
  ];
  const model = [
    ...int(1, 8), // ir_version
    ...bytes(2, 'clinicalsuite-test'),
    ...bytes(7, graph),
    ...bytes(8, [...bytes(1, ''), ...int(2, 17)]), // opset 17
  ];
  return Uint8Array.from(model);
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
