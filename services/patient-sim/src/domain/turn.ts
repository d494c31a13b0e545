import type { CaseFile, Fact, Finding } from '../schemas/case.js';
import type { ChatBackend, Usage } from '@clinicalsuite/kit/llm';
import { disclose } from './disclosure.js';
import { diagnosisTerms, findLeak, redact } from './leak.js';
import { buildMessages, promptInstructions, promptView, type Exchange } from './prompt.js';

/**
 * One clinician message answered: disclose what it asks for, build the prompt from the revealed
 * facts only, ask the backend, check the reply for the diagnosis (regenerate with a stricter
 * reminder, then redact the sentences that name it, else the case's own "I don't know" line).
 * Nothing here touches the session: the caller records the outcome once the turn succeeded, so a
 * failed turn reveals nothing.
 */

export type Guard = 'none' | 'regenerated' | 'redacted' | 'replaced';

export interface TurnSettings {
  readonly model: string;
  readonly temperature: number;
  readonly maxTokens: number;
  readonly historyChars: number;
  readonly leakRetries: number;
}

export interface TurnInput {
  readonly caseFile: CaseFile;
  /** Ids already revealed in the session. */
  readonly revealed: ReadonlySet<string>;
  readonly history: readonly Exchange[];
  readonly message: string;
  readonly settings: TurnSettings;
}

export interface TurnOutcome {
  readonly reply: string;
  readonly newFacts: readonly Fact[];
  readonly findings: readonly Finding[];
  readonly newFindings: readonly Finding[];
  readonly guard: Guard;
  readonly model: string;
  readonly finishReason: string;
  readonly usage: Usage;
  /** Backend calls (1 + regenerations). */
  readonly calls: number;
  readonly llmMs: number;
}

export class EmptyReplyError extends Error {
  constructor() {
    super('The LLM returned an empty reply');
  }
}

const SPEAKER_LINE =
  /^\s*(doctor|clinician|physician|user|assistant|patient|bác sĩ|bệnh nhân|bs|bn)\s*:\s*/iu;

const PATIENT_LABELS = new Set(['patient', 'assistant', 'bệnh nhân', 'bn']);

/** A dialogue line in the Vietnamese (and common) style: "- Có ạ." */
const DASH_LINE = /^\s*[-–—]\s+/u;

/**
 * The reply as the patient's words: without a leading "Patient:" label or dialogue dash, and cut
 * where the model starts writing the next speaker's line (base models continue the dialogue).
 */
export function cleanReply(text: string): string {
  const out: string[] = [];
  for (const line of text.replace(/\r/g, '').split('\n')) {
    const opening = out.join('').trim() === '';
    const m = SPEAKER_LINE.exec(line);
    if (m !== null) {
      if (opening && PATIENT_LABELS.has((m[1] ?? '').toLowerCase())) {
        out.push(line.slice(m[0].length));
        continue;
      }
      break;
    }
    const dash = DASH_LINE.exec(line);
    if (dash !== null) {
      if (!opening) break;
      out.push(line.slice(dash[0].length));
      continue;
    }
    out.push(line);
  }
  return out.join('\n').trim();
}

/**
 * The reply without the instructions it repeats: a model that is not instruction-tuned may echo
 * its system prompt. Each instruction (`promptInstructions`) and each of its sentences of 20+
 * characters is removed from the reply, longest first. The patient's own words in the prompt (the
 * chief complaint, the revealed facts) are what the patient is meant to say, word for word if the
 * model likes: they are not instructions and stay, as does any instruction piece they contain.
 */
export function withoutEcho(
  reply: string,
  instructions: readonly string[],
  patientWords: readonly string[] = [],
): string {
  const lines = instructions.flatMap((i) => i.split('\n')).map((l) => l.trim());
  // Whole instructions first (the shortest is the complaint's label), then their sentences.
  const pieces = [
    ...lines,
    ...lines
      .flatMap((l) => l.split(/(?<=[.!?])\s+/u))
      .map((p) => p.trim())
      .filter((p) => p.length >= 20),
  ]
    .filter((p) => p !== '' && !patientWords.some((w) => w.includes(p)))
    .sort((a, b) => b.length - a.length);
  let out = reply;
  for (const p of pieces) out = out.split(p).join(' ');
  // Untouched when nothing was echoed.
  if (out === reply) return reply;
  return (
    out
      .replace(/[ \t]+/g, ' ')
      // Each run of white space holding a line break becomes that line break.
      .replace(/\s+/g, (run) => (run.includes('\n') ? '\n' : run))
      .trim()
  );
}

export async function runTurn(
  backend: ChatBackend,
  input: TurnInput,
  signal: AbortSignal,
): Promise<TurnOutcome> {
  const { caseFile, settings } = input;
  const d = disclose(caseFile, input.message, input.revealed);
  const newIds = new Set(d.newFacts.map((f) => f.id));
  const facts = caseFile.facts.filter((f) => input.revealed.has(f.id) || newIds.has(f.id));
  const view = promptView(caseFile);
  const terms = diagnosisTerms(caseFile.diagnosis);
  // What the patient may say word for word: never taken for an echo of the instructions.
  const patientWords = [view.chief_complaint, ...facts.map((f) => f.text)];
  let promptTokens = 0;
  let completionTokens = 0;
  let llmMs = 0;
  // The latest reply that named the diagnosis: redacted when no regeneration gives a clean one
  // (an empty regeneration does not throw it away).
  let leakedReply: string | undefined;
  let model = settings.model;
  let finishReason = 'unknown';
  const attempts = 1 + settings.leakRetries;
  for (let call = 1; call <= attempts; call++) {
    const messages = buildMessages({
      view,
      facts,
      procedures: d.findings,
      history: input.history,
      message: input.message,
      historyChars: settings.historyChars,
      strict: call > 1,
    });
    const result = await backend.complete(
      { model: settings.model, messages, temperature: settings.temperature, maxTokens: settings.maxTokens },
      signal,
    );
    promptTokens += result.usage.promptTokens;
    completionTokens += result.usage.completionTokens;
    llmMs += result.llmMs;
    model = result.model;
    finishReason = result.finishReason;
    const instructions = promptInstructions({ view, facts, procedures: d.findings, strict: call > 1 });
    const reply = withoutEcho(cleanReply(result.text), instructions, patientWords);
    if (reply === '') continue;
    if (findLeak(reply, terms) !== null) {
      leakedReply = reply;
      continue;
    }
    return {
      reply,
      ...disclosed(d),
      guard: call === 1 ? 'none' : 'regenerated',
      model,
      finishReason,
      usage: { promptTokens, completionTokens },
      calls: call,
      llmMs,
    };
  }
  if (leakedReply === undefined) throw new EmptyReplyError();
  const redacted = redact(leakedReply, terms);
  return {
    reply: redacted === '' ? caseFile.persona.unsure_reply : redacted,
    ...disclosed(d),
    guard: redacted === '' ? 'replaced' : 'redacted',
    model,
    finishReason,
    usage: { promptTokens, completionTokens },
    calls: attempts,
    llmMs,
  };
}

function disclosed(
  d: ReturnType<typeof disclose>,
): Pick<TurnOutcome, 'newFacts' | 'findings' | 'newFindings'> {
  return { newFacts: d.newFacts, findings: d.findings, newFindings: d.newFindings };
}
