import type { AgentConfig } from '../config.js';
import type { SubserviceId } from './subservices.js';

/**
 * What the agent knows about each sub-service: its name in messages, the variable that points the
 * agent at it, what it is for (`/capabilities`), and whether it runs on a GPU in the suite's default
 * deployment (the operator's component catalogue: only face recognition and the LLMs do; the
 * sub-service's own `/gpu_status` tells what it has at run time).
 */

export interface SubserviceEntry {
  readonly id: SubserviceId;
  readonly name: string;
  /** The configuration variable holding its base URL. */
  readonly envVar: 'STT_URL' | 'OCR_URL' | 'TTS_URL' | 'CODE_SEARCH_URL' | 'PATIENT_SIM_URL' | 'FACE_URL';
  /** The configuration variable holding the token it accepts. */
  readonly tokenVar:
    | 'STT_API_TOKEN'
    | 'OCR_API_TOKEN'
    | 'TTS_API_TOKEN'
    | 'CODE_SEARCH_API_TOKEN'
    | 'PATIENT_SIM_API_TOKEN'
    | 'FACE_API_TOKEN';
  readonly description: string;
  readonly tags: readonly string[];
  readonly gpu: boolean;
  /** The agent's endpoints that call it. */
  readonly endpoints: readonly string[];
}

export const SUBSERVICE_CATALOGUE: Readonly<Record<SubserviceId, SubserviceEntry>> = {
  stt: {
    id: 'stt',
    name: 'Speech to text',
    envVar: 'STT_URL',
    tokenVar: 'STT_API_TOKEN',
    description:
      'Transcribes WAV, MP3 and OGG speech: Vietnamese and English with a mounted Whisper model (whisper.cpp), English with pocketsphinx.',
    tags: ['speech', 'audio', 'transcription', 'vi', 'en'],
    gpu: false,
    endpoints: [
      'POST /transcribe',
      'POST /pipeline/audio-to-diagnosis',
      'POST /pipeline/audio-full-consult',
      'POST /run/multipart',
    ],
  },
  ocr: {
    id: 'ocr',
    name: 'OCR',
    description:
      'Reads Vietnamese and English text, with line boxes and confidences, from images, scans and PDF pages (tesseract).',
    envVar: 'OCR_URL',
    tokenVar: 'OCR_API_TOKEN',
    tags: ['ocr', 'image', 'document', 'vi', 'en'],
    gpu: false,
    endpoints: [
      'POST /ocr',
      'POST /pipeline/image-to-codes',
      'POST /pipeline/image-full-analysis',
      'POST /run/multipart',
    ],
  },
  tts: {
    id: 'tts',
    name: 'Text to speech',
    envVar: 'TTS_URL',
    tokenVar: 'TTS_API_TOKEN',
    description:
      'Speaks Vietnamese and English text as WAV or MP3: Piper neural voices where installed, else espeak-ng.',
    tags: ['speech', 'audio', 'synthesis', 'vi', 'en'],
    gpu: false,
    endpoints: ['POST /tts', 'POST /pipeline/audio-full-consult'],
  },
  codesearch: {
    id: 'codesearch',
    name: 'Medical code search',
    envVar: 'CODE_SEARCH_URL',
    tokenVar: 'CODE_SEARCH_API_TOKEN',
    description:
      'Finds ICD-10, ICPC-2, CPT, service and procedure codes from Vietnamese or English text (BM25, fused with embeddings when loaded).',
    tags: ['codes', 'icd10', 'icpc2', 'search', 'vi', 'en'],
    gpu: false,
    endpoints: ['POST /search', 'POST /ocr', 'POST /pipeline/image-to-codes'],
  },
  patient_sim: {
    id: 'patient_sim',
    name: 'Patient simulator',
    envVar: 'PATIENT_SIM_URL',
    tokenVar: 'PATIENT_SIM_API_TOKEN',
    description:
      'An LLM plays a patient from a case file for history-taking practice, revealing facts and findings only when asked.',
    tags: ['simulation', 'education', 'chat', 'vi', 'en'],
    gpu: false,
    endpoints: ['POST /patient'],
  },
  face: {
    id: 'face',
    name: 'Face recognition',
    envVar: 'FACE_URL',
    tokenVar: 'FACE_API_TOKEN',
    description:
      'Detects faces in an image and matches each one against the persons registered with the face service.',
    tags: ['face', 'image', 'recognition'],
    gpu: true,
    endpoints: ['POST /face'],
  },
};

/** The base URL configured for a sub-service, or undefined. */
export function subserviceUrl(config: AgentConfig, id: SubserviceId): string | undefined {
  return config[SUBSERVICE_CATALOGUE[id].envVar];
}

/** The token the agent presents to sub-service `id`, when its variable is set. */
export function subserviceToken(config: AgentConfig, id: SubserviceId): string | undefined {
  return config[SUBSERVICE_CATALOGUE[id].tokenVar];
}

/** `the speech to text sub-service (stt)`: how messages name it. */
export function label(id: SubserviceId): string {
  return `the ${SUBSERVICE_CATALOGUE[id].name.toLowerCase().replace(/^ocr$/, 'OCR')} sub-service (${id})`;
}
