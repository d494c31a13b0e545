/**
 * The reasoning engine's knowledge bases (docs/knowledge-base.md): the file format and its zod
 * schemas, the loader (files) and validator (pure), merging, and the HPO import.
 */
export {
  CONDITION_COLUMNS,
  conditionRowSchema,
  FEATURE_COLUMNS,
  featureRowSchema,
  HPO_ID_PATTERN,
  ICD10_PATTERN,
  KB_FILES,
  KB_FORMAT,
  KB_ID_PATTERN,
  kbLeakFileSchema,
  kbManifestSchema,
  kbSourceFileSchema,
  LINK_COLUMNS,
  linkRowSchema,
  RECORD_ID_PATTERN,
  SOURCE_KINDS,
  SYNONYM_SEPARATOR,
  type ConditionRow,
  type FeatureRow,
  type KbDocument,
  type KbFileKey,
  type KbManifest,
  type KbSourceFile,
  type LinkRow,
  type SourceKind,
} from './schema.js';
export { parseCsv, writeCsv, type CsvParseResult, type CsvRecord } from './csv.js';
export {
  fileLabel,
  parseKbTexts,
  serializeKbDocument,
  type KbRowLines,
  type KbTexts,
  type ParsedKb,
} from './format.js';
export {
  formatProblem,
  KB_PROBLEM_CODES,
  KnowledgeBaseError,
  type KbProblem,
  type KbProblemCode,
} from './problems.js';
export {
  checkKbTexts,
  NO_LEAK_SOURCE,
  sortProblems,
  validateKb,
  type KbLoadReport,
  type KbValidationInput,
  type KbValidationResult,
  type NotScorableCondition,
} from './validate.js';
export {
  mergeKnowledgeBases,
  type MergeInput,
  type MergeOptions,
  type MergeResult,
  type UnifiedFeature,
} from './merge.js';
export {
  kbLabel,
  loadKnowledgeBase,
  loadKnowledgeBaseOrThrow,
  loadKnowledgeBases,
  readKbDocument,
  readKbTexts,
  writeKbDocument,
  type KbSetLoadResult,
} from './loader.js';
export {
  parseObo,
  resolveTerm,
  type OboOntology,
  type OboSynonym,
  type OboTerm,
  type ResolvedTerm,
} from './obo.js';
export { HPOA_COLUMNS, parseHpoa, type HpoaFile, type HpoaRow } from './hpoa.js';
export {
  checkFrequencyTerms,
  HPO_DEFAULT_LEAK,
  HPO_EPSILON,
  HPO_FREQUENCY_TERMS,
  HPO_LEAK_SOURCE,
  HPO_NO_FREQUENCY_DEFAULT,
  HPO_NO_FREQUENCY_SOURCE,
  HPO_UNIFORM_PRIOR,
  HpoImportError,
  hpoSources,
  importHpo,
  UNIFORM_PRIOR_SOURCE,
  type HpoFrequencyTerm,
  type HpoImportOptions,
  type HpoImportReport,
  type HpoImportResult,
} from './hpo.js';
