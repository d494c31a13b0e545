/**
 * Intent detection for `/run`, `/run/multipart` and `/ws/chat`: the keyword rules (rules.ts, table
 * in patterns.ts) and the detector that asks the LLM when they are unsure (classifier.ts).
 */
export {
  AUDIO_INTENTS,
  IMAGE_INTENTS,
  detectByRules,
  foldText,
  isTrivialChat,
  scoreByRules,
  type AttachmentHints,
  type RuleMatch,
  type RuleScores,
} from './rules.js';
export {
  CLASSIFIER_MAX_CHARS,
  CLASSIFIER_MAX_TOKENS,
  DEFAULT_INTENT_THRESHOLD,
  IntentDetector,
  classifierCall,
  parseClassifierReply,
  type IntentDecision,
  type IntentDetectorOptions,
  type IntentInput,
} from './classifier.js';
