import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { describeReal, missingModel, realModelPath } from '../fixtures/real-component.js';
import { auth, post, startLlm, type LlmTestServer } from './helpers.js';

// The real Gemma 3 270M base GGUF (`npm run models -- fetch llm-base`).
const PATH = realModelPath('llm', 'gemma-3-270m-q4_k_m.gguf');

describeReal(missingModel(PATH, 'llm-base'), 'the real llm-base GGUF', () => {
  let srv: LlmTestServer;
  beforeAll(async () => {
    srv = await startLlm({
      MODEL_PATH: PATH,
      THREADS: '2',
      CONTEXT_SIZE: '1024',
      MAX_CONCURRENCY: '2',
    });
  }, 60_000);
  afterAll(() => srv.close());

  it('loads, says it has no chat template (a base model), and generates the same text streamed or not', async () => {
    const status = (await (await fetch(`${srv.url}/status`, { headers: auth })).json()) as {
      model: { architecture: string; chat_template: { source: string; note: string } };
    };
    expect(status.model.architecture).toBe('gemma3');
    expect(status.model.chat_template.source).toBe('fallback');
    expect(status.model.chat_template.note).toContain('not instruction-tuned');
    const body = {
      model: 'alpha-2-9b-it',
      messages: [{ role: 'user', content: 'The capital of France is' }],
      max_tokens: 8,
      temperature: 0,
    };
    const whole = (await (await post(`${srv.url}/v1/chat/completions`, body)).json()) as {
      choices: { message: { content: string }; finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    expect(whole.usage.completion_tokens).toBeGreaterThan(0);
    const streamed = await (await post(`${srv.url}/v1/chat/completions`, { ...body, stream: true })).text();
    const text = streamed
      .split('\n\n')
      .filter((e) => e.startsWith('data: {'))
      .map(
        (e) =>
          (JSON.parse(e.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta
            .content ?? '',
      )
      .join('');
    expect(text).toBe(whole.choices[0]!.message.content);
  }, 60_000);
});
