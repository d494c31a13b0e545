import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { createLogger, ServiceUnavailableError } from '@clinicalsuite/kit';
import {
  LlmClient,
  type ChatBackend,
  type CompletionRequest,
  type CompletionResult,
} from '@clinicalsuite/kit/llm';
import {
  ExtractorError,
  extractFindings,
  foldText,
  locateSpan,
  type ExtractedFinding,
  type ExtractionResult,
} from '../../services/reasoning/src/extract/index.js';
import { captureLogs } from '../kit/helpers.js';
import { startLlm, TOKEN, type LlmTestServer } from '../llm/helpers.js';

// The LLM pass: against the real text LLM with the tiny generated model (its output is gibberish
// but held to the findings schema by the grammar), and against a scripted backend where the
// content of the reply matters (placing spans, context, merging).

const MODEL = 'alpha-2-9b-it';
const signal = (): AbortSignal => new AbortController().signal;

/** A backend that answers with a fixed reply (or failure) and records the requests. */
class ScriptedLlm implements ChatBackend {
  readonly requests: CompletionRequest[] = [];
  constructor(
    private readonly reply: string | Error | ((s: AbortSignal) => Promise<never>),
    private readonly finishReason = 'stop',
  ) {}
  async complete(request: CompletionRequest, s: AbortSignal): Promise<CompletionResult> {
    this.requests.push(request);
    if (typeof this.reply === 'function') return this.reply(s);
    if (this.reply instanceof Error) throw this.reply;
    await Promise.resolve();
    return {
      text: this.reply,
      model: 'scripted',
      finishReason: this.finishReason,
      usage: { promptTokens: 100, completionTokens: 50 },
      attempts: 1,
      llmMs: 1,
    };
  }
}

interface F {
  span: string;
  name: string;
  kind?: string;
  present?: boolean;
  certainty?: 'stated' | 'probable' | 'possible';
}
const reply = (...findings: F[]): string =>
  JSON.stringify({
    findings: findings.map((f) => ({ kind: 'symptom', present: true, certainty: 'stated', ...f })),
  });

function llmFindings(result: ExtractionResult): ExtractedFinding[] {
  return result.findings.filter((f) => f.source === 'llm');
}

function expectExactSpans(text: string, result: ExtractionResult): void {
  for (const f of [...result.findings, ...result.family]) expect(text.slice(f.start, f.end)).toBe(f.text);
}

describe('placing the LLM’s spans in the text', () => {
  it('finds a span exactly, then ignoring case and diacritics, on word boundaries only', () => {
    const text = foldText('Bệnh nhân Sốt cao, hoa mắt.');
    expect(locateSpan(text, 'Sốt cao')).toEqual({ start: 10, end: 17 });
    expect(locateSpan(text, 'sot cao')).toEqual({ start: 10, end: 17 });
    expect(locateSpan(text, '  "sốt cao",  ')).toEqual({ start: 10, end: 17 });
    expect(locateSpan(text, 'ho')).toBeNull(); // only inside "hoa"
    expect(locateSpan(text, 'đau ngực')).toBeNull();
  });

  it('gives a repeated span its next free place', () => {
    const text = foldText('ho khan, rồi ho ra đờm');
    const first = locateSpan(text, 'ho')!;
    expect(locateSpan(text, 'ho', [first], first.end)).toEqual({ start: 13, end: 15 });
    expect(locateSpan(text, 'ho', [first, { start: 13, end: 15 }])).toBeNull();
  });
});

describe('the LLM pass with a scripted backend', () => {
  const text = 'Không đau hạ sườn phải, nghi viêm túi mật, sốt 39 độ. Mẹ bị viêm gan B. Tiền sử sỏi mật.';

  it('keeps findings found in the text, drops the rest, and applies context to unmarked ones', async () => {
    const llm = new ScriptedLlm(
      reply(
        { span: 'đau hạ sườn phải', name: 'Right upper quadrant pain' },
        { span: 'viem tui mat', name: 'cholecystitis', kind: 'sign' },
        { span: 'vàng da', name: 'jaundice', kind: 'sign' },
        { span: 'sốt 39 độ', name: 'temperature', kind: 'vital' },
        { span: 'viêm gan B', name: 'hepatitis b', kind: 'history' },
        { span: 'sỏi mật', name: 'gallstones', kind: 'symptom' },
      ),
    );
    const { logs, destination } = captureLogs();
    const logger = createLogger({ service: 'reasoning', level: 'debug', destination });
    const result = await extractFindings(text, {
      llm: { backend: llm, model: MODEL },
      signal: signal(),
      logger,
    });
    expectExactSpans(text, result);

    const byName = new Map(llmFindings(result).map((f) => [f.name, f]));
    // Unmarked by the LLM, negated and hedged by the context pass.
    expect(byName.get('right upper quadrant pain')).toMatchObject({ present: false, certainty: 1 });
    expect(byName.get('cholecystitis')).toMatchObject({
      text: 'viêm túi mật',
      present: true,
      certainty: 0.5,
    });
    // In a history scope: kind history.
    expect(byName.get('gallstones')).toMatchObject({ kind: 'history', present: true });
    // Not in the text: dropped. The vital: the rule's reading wins, with its value.
    expect(byName.has('jaundice')).toBe(false);
    expect(byName.has('temperature')).toBe(false);
    expect(result.findings.find((f) => f.name === 'temperature')).toMatchObject({
      source: 'rules',
      value: 39,
    });
    // A relative's: kept out of the patient's findings.
    expect(result.family.map((f) => [f.name, f.source])).toEqual([['hepatitis b', 'llm']]);
    expect(result.llm).toMatchObject({ model: 'scripted', returned: 6, dropped: 1, merged: 1, kept: 4 });

    const dropLog = logs.find(
      (l) => l['msg'] === 'extractor: dropped LLM findings whose span is not in the text',
    );
    expect(dropLog).toMatchObject({ returned: 6, dropped: 1, level: 'info' });
    expect(JSON.stringify(logs)).not.toContain('sườn');
  });

  it('keeps what the LLM marked (absent or hedged) as the LLM read it', async () => {
    const llm = new ScriptedLlm(
      reply(
        { span: 'Đau hạ sườn phải', name: 'ruq pain', certainty: 'possible' },
        { span: 'vàng mắt nhẹ', name: 'scleral icterus', kind: 'sign', present: false },
      ),
    );
    const t = 'Đau hạ sườn phải, vàng mắt nhẹ.';
    const result = await extractFindings(t, { llm: { backend: llm, model: MODEL }, signal: signal() });
    expect(llmFindings(result).map((f) => [f.name, f.present, f.certainty])).toEqual([
      ['ruq pain', true, 0.5],
      ['scleral icterus', false, 1],
    ]);
  });

  it('asks under the findings schema, greedy, with the note as the user message', async () => {
    const llm = new ScriptedLlm(reply());
    await extractFindings(text, { llm: { backend: llm, model: MODEL, maxFindings: 5 }, signal: signal() });
    const request = llm.requests[0]!;
    expect(request).toMatchObject({ model: MODEL, temperature: 0, maxTokens: 1536 });
    expect(request.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(request.messages[1]!.content).toBe(text);
    const schema = request.jsonSchema!.schema as { properties: { findings: { maxItems: number } } };
    expect(schema.properties.findings.maxItems).toBe(5);
  });

  it('merges: rules win for the same name on the same text', async () => {
    const t = 'Không ho, sốt 38,5 độ.';
    const llm = new ScriptedLlm(
      reply({ span: 'ho', name: 'cough' }, { span: '38,5 độ', name: 'temperature', kind: 'vital' }),
    );
    const result = await extractFindings(t, { llm: { backend: llm, model: MODEL }, signal: signal() });
    expect(result.findings.map((f) => [f.name, f.source, f.present])).toEqual([
      ['cough', 'rules', false],
      ['fever', 'rules', true],
      ['temperature', 'rules', true],
    ]);
    expect(result.llm).toMatchObject({ returned: 2, dropped: 0, merged: 2, kept: 0 });
  });

  it('turns a reply that is not the findings JSON into ExtractorError, with the rule findings', async () => {
    for (const [answer, finish, message] of [
      ['{"findings":[{"span":"s', 'length', /other than JSON \(cut at max tokens/],
      ['not json', 'stop', /other than JSON$/],
      ['{"findings":[{"span":1}]}', 'stop', /not the findings schema at findings\.0\.span/],
    ] as const) {
      const error = await extractFindings(text, {
        llm: { backend: new ScriptedLlm(answer, finish), model: MODEL },
        signal: signal(),
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ExtractorError);
      const e = error as ExtractorError;
      expect(e.message).toMatch(message);
      expect(e.partial!.findings.find((f) => f.name === 'temperature')).toMatchObject({ value: 39 });
    }
  });

  it('turns a failing LLM into ExtractorError (502 extractor_failed) with the cause and the rule findings', async () => {
    const cause = new ServiceUnavailableError('The LLM at http://llm:8000 is unreachable (ECONNREFUSED)');
    const error = await extractFindings(text, {
      llm: { backend: new ScriptedLlm(cause), model: MODEL },
      signal: signal(),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExtractorError);
    const e = error as ExtractorError;
    expect([e.status, e.code]).toEqual([502, 'extractor_failed']);
    expect(e.message).toBe('The extractor failed: The LLM at http://llm:8000 is unreachable (ECONNREFUSED)');
    expect(e.cause).toBe(cause);
    expect(e.partial!.llm).toBeNull();
    expect(e.partial!.timings.llmMs).not.toBeNull();
    expect(e.partial!.findings.map((f) => f.name)).toEqual(expect.arrayContaining(['fever', 'temperature']));
  });

  it('lets a client abort through as it is, not as an extractor failure', async () => {
    const controller = new AbortController();
    const llm = new ScriptedLlm(
      (s) =>
        new Promise<never>((_, reject) => {
          s.addEventListener('abort', () => {
            reject(s.reason as Error);
          });
        }),
    );
    const pending = extractFindings(text, { llm: { backend: llm, model: MODEL }, signal: controller.signal });
    const reason = new Error('client went away');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect(extractFindings(text, { signal: controller.signal })).rejects.toBe(reason);
  });

  it('answers from the rules alone without an LLM', async () => {
    const result = await extractFindings(text, { signal: signal() });
    expect(result.llm).toBeNull();
    expect(result.timings.llmMs).toBeNull();
    expect(result.findings.every((f) => f.source === 'rules')).toBe(true);
    expect(result.timings.totalMs).toBeGreaterThanOrEqual(result.timings.rulesMs);
  });
});

describe('the LLM pass against the real text LLM (tiny generated model)', () => {
  let srv: LlmTestServer;
  let client: LlmClient;
  const text = 'Bệnh nhân nam 45 tuổi, sốt 39 độ 3 ngày, không ho, không khó thở. HA 140/90, SpO2 92%.';

  beforeAll(async () => {
    srv = await startLlm();
    client = new LlmClient({ baseUrl: srv.url, token: TOKEN, timeoutMs: 30_000, retries: 0, backoffMs: 10 });
  });
  afterAll(async () => {
    await srv.close();
  });

  it('gets grammar-constrained output that parses, drops the gibberish spans, keeps the rules', async () => {
    const { logs, destination } = captureLogs();
    const logger = createLogger({ service: 'reasoning', level: 'info', destination });
    const run = () =>
      extractFindings(text, {
        llm: { backend: client, model: MODEL, maxFindings: 3, maxTokens: 800 },
        signal: signal(),
        logger,
      });
    const result = await run();
    const llm = result.llm!;
    expect(llm.model).toBe(MODEL);
    expect(llm.returned).toBeGreaterThan(0);
    expect(llm.returned).toBeLessThanOrEqual(3);
    expect(llm.completionTokens).toBeGreaterThan(0);
    expect(llm.dropped + llm.merged + llm.kept).toBe(llm.returned);
    // The tiny model writes spans that are nowhere in the note: never kept.
    expect(llm.dropped).toBeGreaterThan(0);
    expectExactSpans(text, result);
    expect(logs.some((l) => l['dropped'] === llm.dropped)).toBe(true);
    // The rule findings are all there.
    const names = result.findings.filter((f) => f.source === 'rules').map((f) => f.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'male',
        'age',
        'temperature',
        'duration',
        'cough',
        'dyspnea',
        'oxygen saturation',
      ]),
    );
    expect(result.timings.llmMs).toBeGreaterThan(0);
    // Greedy decoding on a fixed model: the same result again.
    const again = await run();
    expect({ ...again, timings: null }).toEqual({ ...result, timings: null });
  });

  it('a dead LLM gives ExtractorError while the rules still answer', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const address = server.address() as { port: number };
        server.close(() => {
          resolve(address.port);
        });
      });
    });
    const dead = new LlmClient({
      baseUrl: `http://127.0.0.1:${port}`,
      timeoutMs: 5000,
      retries: 0,
      backoffMs: 10,
    });
    const error = await extractFindings(text, {
      llm: { backend: dead, model: MODEL },
      signal: signal(),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExtractorError);
    const e = error as ExtractorError;
    expect(e.status).toBe(502);
    expect(e.message).toMatch(
      /^The extractor failed: The LLM at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED\)$/,
    );
    expect(e.partial!.findings.find((f) => f.name === 'temperature')).toMatchObject({
      value: 39,
      unit: '°C',
    });
    expect(e.partial!.findings.find((f) => f.name === 'cough')).toMatchObject({ present: false });
  });

  it('an LLM that is up but has no model loaded gives ExtractorError too', async () => {
    const idle = await startLlm({}, { start: false });
    try {
      const c = new LlmClient({
        baseUrl: idle.url,
        token: TOKEN,
        timeoutMs: 5000,
        retries: 0,
        backoffMs: 10,
      });
      const error = await extractFindings(text, {
        llm: { backend: c, model: MODEL },
        signal: signal(),
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ExtractorError);
      expect((error as ExtractorError).message).toMatch(
        /^The extractor failed: The LLM at .* is not available \(503\)/,
      );
    } finally {
      await idle.close();
    }
  });
});
