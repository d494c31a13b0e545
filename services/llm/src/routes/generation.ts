import { performance } from 'node:perf_hooks';
import { ClientClosedRequestError, GatewayTimeoutError } from '@clinicalsuite/kit';
import type { LlmEngine } from '../adapters/engine.js';
import { resolveMaxTokens } from '../domain/budget.js';
import {
  usageOf,
  type ChatTurn,
  type GenerationParams,
  type GenerationResult,
  type Usage,
} from '../domain/types.js';
import type { LlmMetrics } from '../metrics.js';

/**
 * One generation, measured: the prompt is counted and checked against the context first (a 400
 * before anything is sent), then generated with vLLM's timings recorded.
 */

export interface PreparedGeneration {
  readonly turns: readonly ChatTurn[];
  readonly promptTokens: number;
  readonly params: GenerationParams;
}

export function prepareGeneration(
  engine: LlmEngine,
  turns: readonly ChatTurn[],
  requestedMaxTokens: number | undefined,
  params: (maxTokens: number) => GenerationParams,
): PreparedGeneration {
  const promptTokens = engine.countPromptTokens(turns);
  const maxTokens = resolveMaxTokens(promptTokens, requestedMaxTokens, engine.contextSize);
  return { turns, promptTokens, params: params(maxTokens) };
}

export interface Timing {
  /** performance.now() when the request arrived. */
  readonly arrivedAt: number;
  /** performance.now() when it got its slot. */
  readonly startedAt: number;
}

export async function runGeneration(
  engine: LlmEngine,
  metrics: LlmMetrics,
  prepared: PreparedGeneration,
  timing: Timing,
  signal: AbortSignal,
  onText?: (text: string) => void,
): Promise<{ result: GenerationResult; usage: Usage; elapsedMs: number }> {
  metrics.queueTime.observe((timing.startedAt - timing.arrivedAt) / 1000);
  let last: number | undefined;
  let generated = 0;
  const onTokens = (count: number): void => {
    const now = performance.now();
    generated += count;
    if (last === undefined) metrics.timeToFirstToken.observe((now - timing.arrivedAt) / 1000);
    else for (let i = 0; i < count; i++) metrics.interTokenLatency.observe((now - last) / 1000 / count);
    last = now;
  };
  try {
    const result = await engine.generate(
      prepared.turns,
      prepared.params,
      onText === undefined ? { onTokens } : { onTokens, onText },
      signal,
    );
    const elapsedMs = performance.now() - timing.arrivedAt;
    metrics.e2eLatency.observe(elapsedMs / 1000);
    metrics.promptTokens.inc(prepared.promptTokens);
    metrics.generationTokens.inc(result.completionTokens);
    metrics.requestSuccess.inc({ finished_reason: result.finishReason });
    return {
      result,
      usage: usageOf(prepared.promptTokens, result.completionTokens, result.cachedPromptTokens),
      elapsedMs,
    };
  } catch (error) {
    const reason =
      error instanceof ClientClosedRequestError
        ? 'client_closed'
        : error instanceof GatewayTimeoutError
          ? 'timeout'
          : 'error';
    metrics.requestsAborted.inc({ reason });
    metrics.promptTokens.inc(prepared.promptTokens);
    metrics.generationTokens.inc(generated);
    throw error;
  }
}
