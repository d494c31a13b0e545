import { performance } from 'node:perf_hooks';
import express, { type Request, type RequestHandler } from 'express';
import type { ConcurrencyGate } from '@clinicalsuite/kit';
import type { ModelHost } from '../adapters/model-host.js';
import type { LlmConfig } from '../config.js';
import type { LlmMetrics } from '../metrics.js';

/**
 * What the routes share. `gate` and `metrics` exist only once the kit built the app (which takes
 * the routes), so they are read through getters at request time.
 */
export interface LlmRuntime {
  readonly config: LlmConfig;
  readonly host: ModelHost;
  readonly now: () => Date;
  readonly startedAt: Date;
  readonly gate: ConcurrencyGate;
  readonly metrics: LlmMetrics;
  /** Names a request's `model` may take. */
  readonly modelNames: () => string[];
}

const arrivals = new WeakMap<Request, number>();

/**
 * The JSON body parser, preceded by a stamp of the request's arrival: it runs before the gate, so
 * the handler can tell how long the request queued (the kit does not expose that yet).
 */
export function bodyParserWithArrival(limit: number): RequestHandler[] {
  return [
    (req, _res, next) => {
      arrivals.set(req, performance.now());
      next();
    },
    express.json({ limit }),
  ];
}

/** When the request arrived (performance.now() ms); now, when it was not stamped. */
export function arrivalOf(req: Request): number {
  return arrivals.get(req) ?? performance.now();
}
