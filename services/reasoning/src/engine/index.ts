/**
 * The reasoning engine's scoring core: a knowledge base compiled into a naive Bayes model with
 * leak terms and an unknown hypothesis (model.ts), calibrated (calibration.ts), scored as a
 * generated ONNX graph in onnxruntime-node with micro-batching (onnx-graph.ts, onnx-engine.ts) or
 * by the same math in TypeScript (reference.ts), with contributions and information gain.
 * Everything but onnx-engine.ts is pure.
 */
export {
  binaryEntropyBits,
  compileModel,
  identityCalibration,
  MODEL_KIND,
  withCalibration,
  type Calibration,
  type CalibrationFit,
  type CompiledModel,
} from './model.js';
export { EngineUnavailableError, FindingsError, ModelError, type ModelIssue } from './errors.js';
export { encodeFindings, type Evidence } from './evidence.js';
export {
  entropyBits,
  expectedEntropyReduction,
  informationGains,
  MIN_GAIN_BITS,
  PREDICTIVE_CLIP,
  topInformationGains,
} from './information-gain.js';
export { contributions } from './contributions.js';
export {
  buildResult,
  DEFAULT_NEXT_FINDINGS,
  type Engine,
  type EngineInfo,
  type EngineStats,
  type ResultOptions,
} from './result.js';
export {
  logLikelihoodRatios,
  posteriorFromLlr,
  ReferenceEngine,
  scoreEvidence,
  type ReferenceEngineOptions,
  type Scores,
} from './reference.js';
export {
  buildScoringGraph,
  buildScoringGraphFiles,
  EXTERNAL_TABLE_ALIGNMENT,
  GRAPH_INPUTS,
  GRAPH_OUTPUTS,
  OPSET,
} from './onnx-graph.js';
export { EXTERNAL_TABLES_ABOVE_BYTES } from './onnx-session.js';
export {
  loadEngine,
  OnnxEngine,
  type ExecutionDevice,
  type LoadEngineOptions,
  type OnnxEngineOptions,
  type RawScores,
} from './onnx-engine.js';
export {
  calibrationSchema,
  fitCalibration,
  meanLogLoss,
  parseCalibration,
  type FitOptions,
  type LabelledCase,
} from './calibration.js';
export {
  brierScore,
  expectedCalibrationError,
  logLoss,
  reliabilityDiagram,
  topKAccuracy,
  type EvaluatedCase,
  type ReliabilityBin,
  type TopKOptions,
} from './metrics.js';
