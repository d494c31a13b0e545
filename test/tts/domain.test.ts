import { describe, expect, it } from '@jest/globals';
import { languageOfVoice } from '../../services/tts/src/domain/language.js';
import { phonemeIds, phonemesOf, sentencePhonemes } from '../../services/tts/src/domain/phoneme-ids.js';
import { espeakWordsPerMinute, piperLengthScale } from '../../services/tts/src/domain/speed.js';
import { chooseEngine, type NeuralVoice } from '../../services/tts/src/domain/synthesis.js';
import {
  characterCount,
  clauseBreaks,
  hasSpeakableContent,
  normalizeText,
  splitSentences,
} from '../../services/tts/src/domain/text.js';
import {
  concatPcm,
  encodeWav,
  floatToInt16,
  parseWav,
  pcmFromWav,
  WavFormatError,
} from '../../services/tts/src/domain/wav.js';
import { readWav } from './helpers.js';

describe('WAV', () => {
  it('encodes mono 16-bit PCM that an independent reader accepts, and parses it back', () => {
    const samples = Int16Array.from([0, 1, -1, 32767, -32768, 1234]);
    const wav = encodeWav({ samples, sampleRate: 16_000 });
    expect(readWav(wav)).toMatchObject({
      audioFormat: 1,
      channels: 1,
      sampleRate: 16_000,
      bitsPerSample: 16,
      dataBytes: 12,
    });
    expect(Array.from(pcmFromWav(wav).samples)).toEqual(Array.from(samples));
  });

  it('reads a streamed WAV whose sizes were never filled in (espeak-ng on a pipe)', () => {
    const wav = encodeWav({ samples: Int16Array.from([5, 6, 7]), sampleRate: 22_050 });
    wav.writeUInt32LE(0x7ffff024, 4);
    wav.writeUInt32LE(0x7ffff000, 40);
    const parsed = parseWav(wav);
    expect(parsed.declaredDataBytes).toBe(0x7ffff000);
    expect(Array.from(pcmFromWav(wav).samples)).toEqual([5, 6, 7]);
  });

  it('skips chunks before data and refuses what is not mono 16-bit PCM', () => {
    const plain = encodeWav({ samples: Int16Array.from([9]), sampleRate: 8000 });
    const list = Buffer.concat([
      Buffer.from('LIST'),
      Buffer.from([3, 0, 0, 0]),
      Buffer.from('abc'),
      Buffer.from([0]),
    ]);
    const withList = Buffer.concat([plain.subarray(0, 36), list, plain.subarray(36)]);
    expect(Array.from(pcmFromWav(withList).samples)).toEqual([9]);
    const stereo = Buffer.from(plain);
    stereo.writeUInt16LE(2, 22);
    expect(() => pcmFromWav(stereo)).toThrow(/mono 16-bit PCM, got format 1, 2 channels/);
    expect(() => parseWav(Buffer.from('RIFF0000WAVX'))).toThrow(WavFormatError);
  });

  it('normalises float audio to the peak as Piper does, and clips', () => {
    expect(Array.from(floatToInt16(Float32Array.from([0.5, -0.25, 0])))).toEqual([32767, -16383, 0]);
    // A near-silent signal is not blown up more than 100x.
    expect(Array.from(floatToInt16(Float32Array.from([0.001])))).toEqual([3277]);
    expect(Array.from(floatToInt16(Float32Array.from([Number.NaN, 0.5])))).toEqual([0, 32767]);
  });

  it('joins chunks with silence between them', () => {
    expect(Array.from(concatPcm([Int16Array.from([1, 2]), Int16Array.from([3])], 2))).toEqual([
      1, 2, 0, 0, 3,
    ]);
    expect(concatPcm([], 5)).toHaveLength(0);
  });
});

describe('text', () => {
  it('counts code points, so Vietnamese diacritics count once', () => {
    expect(characterCount('bác sĩ')).toBe(6);
    expect(characterCount('bác sĩ'.normalize('NFD'))).toBe(8);
  });

  it('neutralises espeak-ng phoneme input, control characters and odd spacing, and composes diacritics', () => {
    expect(normalizeText("say [[h@l'oU]] now")).toBe("say [h@l'oU] now");
    expect(normalizeText('a\u0000b\u0007c\r\nd\t\te\ufeff')).toBe('a b c\nd e');
    expect(normalizeText('  Xin   chào \n\n\n\n bác sĩ  ')).toBe('Xin chào\n\nbác sĩ');
    expect(normalizeText('bác sĩ'.normalize('NFD'))).toBe('bác sĩ');
    expect(normalizeText('<speak>Hi</speak>')).toBe('<speak>Hi</speak>'); // spoken as text, not parsed
  });

  it('finds something to say only in letters or digits', () => {
    expect(hasSpeakableContent(' ?!... ')).toBe(false);
    expect(hasSpeakableContent('120/80')).toBe(true);
    expect(hasSpeakableContent('đau')).toBe(true);
  });

  it('splits sentences at . ! ? … before white space and at line breaks, keeping the terminator', () => {
    expect(splitSentences('Hello, doctor. How are you?! Fine… thanks\nNew line 3.5 mg')).toEqual([
      { text: 'Hello, doctor', terminator: '.' },
      { text: 'How are you', terminator: '!' },
      { text: 'Fine', terminator: '.' },
      { text: 'thanks', terminator: '.' },
      { text: 'New line 3.5 mg', terminator: '.' },
    ]);
    expect(splitSentences('... ?')).toEqual([]);
    expect(clauseBreaks('Sốt, ho; đau: nhiều,không')).toEqual([',', ';', ':']);
  });
});

describe('Piper phoneme ids', () => {
  const map = { _: [0], '^': [1], $: [2], ' ': [3], a: [4], b: [5], ',': [6], '.': [7], '\u0301': [8] };

  it('is BOS, pad, each phoneme followed by pad, EOS', () => {
    expect(phonemeIds(['a', ' ', 'b'], map)).toEqual({ ids: [1, 0, 4, 0, 3, 0, 5, 0, 2], missing: [] });
    expect(phonemeIds([], map).ids).toEqual([1, 0, 2]);
  });

  it('skips and reports phonemes the voice lacks', () => {
    expect(phonemeIds(['a', 'x', 'y', 'x'], map)).toEqual({ ids: [1, 0, 4, 0, 2], missing: ['x', 'y'] });
  });

  it('takes the code points of the NFD form, so combining marks are phonemes of their own', () => {
    expect(phonemesOf('á')).toEqual(['a', '\u0301']);
    expect(phonemeIds(phonemesOf('á'), map).ids).toEqual([1, 0, 4, 0, 8, 0, 2]);
  });

  it('refuses a map without pad, BOS or EOS', () => {
    expect(() => phonemeIds(['a'], { a: [1] })).toThrow(/lacks "_"/);
  });

  it('joins clauses with their punctuation when espeak-ng split them as the text did', () => {
    expect(sentencePhonemes(['həlˈoʊ', 'dˈɑːktɚ'], [','], '.')).toBe('həlˈoʊ, dˈɑːktɚ.');
    expect(sentencePhonemes(['a', 'b', 'c'], [','], '?')).toBe('a b c?');
    expect(sentencePhonemes(['a'], [], '!')).toBe('a!');
  });
});

describe('speed and engines', () => {
  it('maps speed to espeak-ng words per minute within its range, and to the VITS length scale', () => {
    expect(espeakWordsPerMinute(1)).toBe(175);
    expect(espeakWordsPerMinute(2)).toBe(350);
    expect(espeakWordsPerMinute(0.5)).toBe(88);
    expect(espeakWordsPerMinute(0.1)).toBe(80);
    expect(espeakWordsPerMinute(5)).toBe(450);
    expect(piperLengthScale(1, 2)).toBe(0.5);
    expect(piperLengthScale(1.2, 0.5)).toBeCloseTo(2.4);
  });

  it('names the language of espeak-ng and Piper voice codes', () => {
    expect(
      ['vi', 'vi_VN', 'vi-vn', 'en', 'en_US', 'en-us', 'en-gb-x-rp', 'fr_FR', ''].map(languageOfVoice),
    ).toEqual(['vi', 'vi', 'vi', 'en', 'en', 'en', 'en', undefined, undefined]);
  });

  it('chooses Piper where the language has a voice, espeak-ng otherwise or when asked', () => {
    const en = { id: 'en_US-x', language: 'en' } as NeuralVoice;
    const voices = new Map([['en', en]] as const);
    expect(chooseEngine('en', 'auto', voices, false)).toEqual({ engine: 'piper', voice: en });
    expect(chooseEngine('en', 'auto', voices, true)).toEqual({ engine: 'espeak-ng' });
    expect(chooseEngine('vi', 'auto', voices, false)).toEqual({ engine: 'espeak-ng' });
    expect(chooseEngine('en', 'espeak', voices, false)).toEqual({ engine: 'espeak-ng' });
    expect(chooseEngine('en', 'piper', voices, true)).toEqual({ engine: 'piper', voice: en });
    expect(chooseEngine('vi', 'piper', voices, false)).toMatchObject({
      engine: 'unavailable',
      reason: expect.stringContaining('no Piper voice is installed for "vi" (installed: en)'),
    });
  });
});
