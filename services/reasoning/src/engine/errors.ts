import { ValidationError, type FieldIssue } from '@clinicalsuite/kit';

/** One problem of a knowledge base found while compiling it: where (`links[3].probability`) and what. */
export interface ModelIssue {
  readonly path: string;
  readonly message: string;
}

/** A knowledge base (or calibration) the engine cannot compile; a startup error, not a request's. */
export class ModelError extends Error {
  readonly issues: readonly ModelIssue[];
  constructor(what: string, issues: readonly ModelIssue[]) {
    super(`${what} cannot be compiled: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    this.name = 'ModelError';
    this.issues = issues;
  }
}

/**
 * Findings the engine cannot score (a feature id the model does not hold, a certainty outside
 * [0, 1]): a 422 whose issues point at `findings[i].<field>`. A route that takes findings under
 * another key can re-root `loc`.
 */
export class FindingsError extends ValidationError {
  constructor(issues: readonly FieldIssue[]) {
    super(issues);
    this.name = 'FindingsError';
  }
}

/** The ONNX engine could not be created or run (onnxruntime missing, provider failure). */
export class EngineUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EngineUnavailableError';
  }
}
