import { describe, expect, it } from '@jest/globals';
import { parsePocketsphinxOutput } from '../../services/stt/src/domain/pocketsphinx-output.js';
import { availableLanguages, routeRequest } from '../../services/stt/src/domain/routing.js';
import { joinSegments, pcmSeconds } from '../../services/stt/src/domain/transcript.js';
import type { BackendStatus } from '../../services/stt/src/domain/types.js';
import {
  ggmlTensorBytes,
  whisperLanguages,
  whisperModelSize,
  whisperSegments,
  type WhisperHparams,
} from '../../services/stt/src/domain/whisper-model.js';
import { wordErrorRate } from './fixtures.js';

// What pocketsphinx_continuous -time yes printed for two utterances (LibriVox 0880 + 0930).
const OUTPUT = `he was not an illness those young man
<s> 0.000 0.060 0.999500
<sil> 0.070 0.200 0.694306
he 0.210 0.320 0.998701
was(2) 0.330 0.540 0.999800
not 0.550 0.970 0.998701
[SPEECH] 0.980 1.100 0.535598
an(2) 1.110 1.290 0.472940
illness 1.300 1.680 0.834168
</s> 2.800 3.090 1.000000
he might even
<s> 4.880 4.970 0.999900
he 5.210 5.370 0.997303
might 5.380 5.620 0.995609
even 5.630 5.910 1.000000
</s> 8.010 8.270 1.000000

<s> 9.000 9.500 1.000000
</s> 9.500 9.900 1.000000
`;

describe('pocketsphinx output', () => {
  it('makes a segment per utterance, timed by its first and last word, without fillers or variants', () => {
    const segments = parsePocketsphinxOutput(OUTPUT);
    expect(segments).toEqual([
      { start: 0.21, end: 1.68, text: 'he was not an illness', confidence: 0.861 },
      { start: 5.21, end: 5.91, text: 'he might even', confidence: 0.998 },
    ]);
    expect(joinSegments(segments)).toBe('he was not an illness he might even');
  });

  it('is empty for silence', () => {
    expect(parsePocketsphinxOutput('')).toEqual([]);
    expect(parsePocketsphinxOutput('\n<s> 0.000 0.500 1.0\n</s> 0.5 0.9 1.0\n')).toEqual([]);
  });

  it('counts 16 kHz s16le PCM in seconds', () => {
    expect(pcmSeconds(32_000)).toBe(1);
  });
});

const ps = (state: BackendStatus['state']): BackendStatus => ({
  id: 'pocketsphinx',
  state,
  languages: ['en'],
  reason: state === 'ready' ? null : 'loading',
  engine: 'pocketsphinx',
  model: 'en-us',
});
const whisper = (state: BackendStatus['state'], languages: BackendStatus['languages'] = ['vi', 'en']) =>
  ({
    id: 'whisper',
    state,
    languages,
    reason: state === 'ready' ? null : 'loading ggml-base.bin',
    engine: 'whisper.cpp',
    model: 'ggml-base.bin',
  }) satisfies BackendStatus;

describe('routing', () => {
  it('refuses Vietnamese without a multilingual model (422), never falling back to English', () => {
    expect(routeRequest('vi', 'auto', [ps('ready')])).toMatchObject({ ok: false, kind: 'unsupported' });
    expect(routeRequest('vi', 'auto', [ps('ready'), whisper('ready', ['en'])])).toMatchObject({
      ok: false,
      kind: 'unsupported',
      field: 'language',
    });
    expect(routeRequest('vi', 'pocketsphinx', [ps('ready')])).toMatchObject({
      ok: false,
      kind: 'unsupported',
    });
  });

  it('sends Vietnamese to a loaded multilingual Whisper model, and waits (503) while it loads', () => {
    expect(routeRequest('vi', 'auto', [ps('ready'), whisper('ready')])).toEqual({
      ok: true,
      backend: 'whisper',
    });
    expect(routeRequest('vi', 'auto', [ps('ready'), whisper('starting')])).toMatchObject({
      ok: false,
      kind: 'not_ready',
    });
  });

  it('prefers Whisper for English when loaded, pocketsphinx otherwise, or the backend named', () => {
    expect(routeRequest('en', 'auto', [ps('ready'), whisper('ready')])).toEqual({
      ok: true,
      backend: 'whisper',
    });
    expect(routeRequest('en', 'auto', [ps('ready'), whisper('failed')])).toEqual({
      ok: true,
      backend: 'pocketsphinx',
    });
    expect(routeRequest('en', 'pocketsphinx', [ps('ready'), whisper('ready')])).toEqual({
      ok: true,
      backend: 'pocketsphinx',
    });
    expect(routeRequest('en', 'whisper', [ps('ready')])).toMatchObject({ ok: false, field: 'backend' });
    expect(routeRequest('en', 'auto', [ps('starting')])).toMatchObject({ ok: false, kind: 'not_ready' });
  });

  it('lists the languages ready backends transcribe', () => {
    expect(availableLanguages([ps('ready'), whisper('starting')])).toEqual(['en']);
    expect(availableLanguages([ps('ready'), whisper('ready')])).toEqual(['vi', 'en']);
  });
});

describe('word error rate', () => {
  it('is edits over reference words', () => {
    expect(
      wordErrorRate('he was not an ill disposed young man', 'he was not an illness those young man'),
    ).toBe(0.25);
    expect(wordErrorRate('a b', '')).toBe(1);
    expect(wordErrorRate('Mr. John', 'mister john')).toBe(0);
  });
});

describe('whisper model and output', () => {
  const base: WhisperHparams = {
    nVocab: 51865,
    nAudioCtx: 1500,
    nAudioState: 512,
    nAudioHead: 8,
    nAudioLayer: 6,
    nTextCtx: 448,
    nTextState: 512,
    nTextHead: 8,
    nTextLayer: 6,
    nMels: 80,
    ftype: 1,
  };

  it('serves Vietnamese only with a multilingual vocabulary', () => {
    expect(whisperLanguages({ nVocab: 51865 })).toEqual(['vi', 'en']);
    expect(whisperLanguages({ nVocab: 51866 })).toEqual(['vi', 'en']);
    expect(whisperLanguages({ nVocab: 51864 })).toEqual(['en']);
  });

  it('names the model size as whisper.cpp does', () => {
    expect(whisperModelSize(base)).toBe('base');
    expect(whisperModelSize({ ...base, nVocab: 51864 })).toBe('base.en');
    expect(whisperModelSize({ ...base, nAudioLayer: 32, nTextLayer: 32, nVocab: 51866 })).toBe('large-v3');
    expect(whisperModelSize({ ...base, nAudioLayer: 32, nTextLayer: 4, nVocab: 51866 })).toBe(
      'large-v3-turbo',
    );
  });

  it('sizes f32, f16 and the quantised tensors', () => {
    expect(ggmlTensorBytes(0, 64)).toBe(256);
    expect(ggmlTensorBytes(1, 64)).toBe(128);
    expect(ggmlTensorBytes(8, 64)).toBe(68);
    expect(ggmlTensorBytes(7, 64)).toBe(48);
    expect(ggmlTensorBytes(99, 64)).toBeNull();
  });

  it('keeps segments inside the audio, in seconds, without empty ones', () => {
    const raw = [
      { text: ' bệnh nhân', t0: 940, t1: 2400 },
      { text: '  ', t0: 2400, t1: 2500 },
      { text: ' sốt', t0: 2500, t1: 28_420 },
    ];
    expect(whisperSegments(raw, 3.2)).toEqual([
      { start: 0.94, end: 2.4, text: 'bệnh nhân', confidence: null },
      { start: 2.5, end: 3.2, text: 'sốt', confidence: null },
    ]);
    expect(whisperSegments([{ text: 'x', t0: 5000, t1: 6000 }], 3)).toEqual([
      { start: 3, end: 3, text: 'x', confidence: null },
    ]);
  });
});
