/**
 * The catalogue of ClinicalSuite components: one row per key of `spec.services`. Everything that
 * knows "which services exist" (the schema, the operator's builders, the local runner) reads this table.
 */

/** The keys of `spec.services`, in catalogue order (the tie-break of every ordering). */
export const COMPONENT_KEYS = [
  'llm',
  'agent',
  'face',
  'medllm',
  'taskProxy',
  'reasoning',
  'taskAgent',
  'stt',
  'ocr',
  'tts',
  'codeSearch',
  'patientSim',
] as const;

export type ComponentKey = (typeof COMPONENT_KEYS)[number];

export interface Component {
  readonly key: ComponentKey;
  readonly title: string;
  readonly description: string;
  /** Directory under `services/` (also the kebab-case name used in object names and log files). */
  readonly dir: string;
  /** Port the service listens on by default. */
  readonly port: number;
  /** Requests processed at once when the spec sets no `concurrency`. */
  readonly concurrency: number;
  /** Whether the component runs on a GPU unless its spec says otherwise. */
  readonly gpu: boolean;
  /**
   * Id of its default model in the kit's model manifest (MODEL_PATH; the spec's `model` replaces
   * it), or null when it needs none.
   */
  readonly model: string | null;
  /** Further manifest models it loads from the models directory (fetched alongside `model`). */
  readonly extraModels?: readonly string[];
  /**
   * The env var naming its multimodal projector file (llama.cpp's mmproj GGUF), for a component
   * whose model comes in two files: the spec's `model.projector` is accepted only where this is set.
   */
  readonly projectorEnv?: string;
  /**
   * Variables the local runner sets, where the service shares one machine with the others (the
   * spec's `env` still wins): a pod keeps the service's own defaults, which suit a container.
   */
  readonly localEnv?: Readonly<Record<string, string>>;
  /**
   * The env var that points replicas at a shared store. Without it each replica keeps its own
   * (an embedded database on its volume), so more than one replica requires it.
   */
  readonly sharedStoreEnv?: string;
  /**
   * Its embedded store, used without `sharedStoreEnv`: the env var naming the file and the file's
   * default name under the component's DATA_DIR. Only a process on the same machine can share it.
   */
  readonly embeddedStore?: { readonly env: string; readonly file: string };
  /**
   * The component whose store this one reads (the task proxy answers from the task agent's while
   * the agent is offline): it gets that component's `sharedStoreEnv` when the owner's spec env sets
   * it, otherwise, where the runtime can share the file (the local runner), its `embeddedStore` env.
   */
  readonly readsStoreOf?: ComponentKey;
  /**
   * Keeps per-client state in memory (the agent's sessions, the task proxy's sign-ins): its Service
   * pins each client to one pod (ClientIP affinity), so sessions survive with more than one replica.
   */
  readonly sessionAffinity?: boolean;
  /**
   * Signs users in itself (the task proxy): the env vars of a first user created at start (the
   * local runner generates them like tokens; on Kubernetes they come from the auth Secret) and of a
   * users file (`username:<hash>` lines, a mounted Secret) that replaces that user when given.
   */
  readonly signIn?: {
    readonly userEnv: string;
    readonly passwordEnv: string;
    readonly usersFileEnv: string;
    /** The first user's name when none is given. */
    readonly defaultUser: string;
  };
  /** Components it calls, used when its spec sets no `dependsOn`. */
  readonly dependsOn: readonly ComponentKey[];
  /**
   * Env vars holding the bearer token(s) this component accepts; its callers receive them too, to
   * present (the local runner and the operator give each service only its own and its dependencies').
   */
  readonly tokenEnv: readonly string[];
  /** Its entry file under `services/<dir>/`, the script that `node` starts. */
  readonly entry: string;
  /** Env var through which dependents receive this component's base URL. */
  readonly urlEnv: string;
}

type Row = Omit<Component, 'key' | 'urlEnv' | 'entry'> & { readonly entry?: string };

const ROWS: Readonly<Record<ComponentKey, Row>> = {
  llm: {
    title: 'Text LLM',
    description:
      'Instruction-tuned Vietnamese/English medical LLM: prompt chat and OpenAI-compatible chat completions.',
    dir: 'llm',
    port: 8001,
    concurrency: 3,
    gpu: true,
    model: 'llm',
    dependsOn: [],
    tokenEnv: ['API_TOKEN'],
    // CommonJS, so that it sizes libuv's thread pool for the CPU or the GPU before anything starts
    // the pool (services/llm/src/thread-pool.ts), then loads dist/main.js.
    entry: 'dist/boot.cjs',
    // Its event loop yields to llama.cpp's threads on a CPU decode (services/llm/README.md,
    // Speed): in a container that weighs only its own threads; on a shared machine it would yield
    // to every other service too.
    localEnv: { EVENT_LOOP_NICE: '0' },
  },
  agent: {
    title: 'Agent orchestrator',
    description:
      'Classifies intent and routes to an LLM or a sub-service; sessions, SSE, WebSocket, pipelines.',
    dir: 'agent',
    port: 8002,
    concurrency: 16,
    gpu: false,
    model: null,
    sessionAffinity: true,
    dependsOn: ['llm', 'stt', 'ocr', 'tts', 'codeSearch', 'patientSim', 'face'],
    tokenEnv: ['AI_AGENT_API_TOKEN'],
  },
  face: {
    title: 'Face recognition',
    description: 'Registers faces under a person name and recognizes them in images, batches and videos.',
    dir: 'face',
    port: 8003,
    concurrency: 3,
    gpu: true,
    model: 'face-recognizer',
    // Both detectors, so FACE_DETECTOR can switch between them (RetinaFace is the default).
    extraModels: ['face-detector-retinaface', 'face-detector'],
    sharedStoreEnv: 'DATABASE_URL',
    dependsOn: [],
    tokenEnv: ['FACE_API_TOKEN'],
  },
  medllm: {
    title: 'Medical multimodal LLM',
    description:
      'OpenAI-compatible chat completions over text and medical images (X-ray, CT, MRI, ultrasound, skin).',
    dir: 'medllm',
    port: 8004,
    concurrency: 1,
    gpu: true,
    model: null,
    projectorEnv: 'MMPROJ_PATH',
    dependsOn: [],
    tokenEnv: ['MEDLLM_API_TOKEN'],
  },
  taskProxy: {
    title: 'Task agent proxy',
    description:
      'Session-protected proxy in front of the task agent; answers from stored data while it is offline ' +
      "(on Kubernetes only with the task agent's DATABASE_URL: its SQLite file cannot be shared).",
    dir: 'task-proxy',
    port: 8005,
    concurrency: 32,
    gpu: false,
    model: null,
    readsStoreOf: 'taskAgent',
    sessionAffinity: true,
    signIn: {
      userEnv: 'TASK_PROXY_USER',
      passwordEnv: 'TASK_PROXY_PASSWORD',
      usersFileEnv: 'TASK_PROXY_USERS_FILE',
      defaultUser: 'admin',
    },
    dependsOn: ['taskAgent'],
    tokenEnv: [],
  },
  reasoning: {
    title: 'Clinical reasoning engine',
    description: 'Free clinical text in, ranked diagnoses with probabilities out.',
    dir: 'reasoning',
    port: 8006,
    concurrency: 4,
    gpu: true,
    model: null,
    dependsOn: ['llm', 'codeSearch'],
    tokenEnv: ['REASONING_API_TOKEN'],
  },
  taskAgent: {
    title: 'Task agent',
    description: 'Autonomous reasoning agent that runs tasks and chats behind the task agent proxy.',
    dir: 'task-agent',
    port: 8007,
    concurrency: 4,
    gpu: false,
    model: null,
    sharedStoreEnv: 'DATABASE_URL',
    embeddedStore: { env: 'TASK_AGENT_DB', file: 'task-agent.sqlite' },
    // Its skills call the code search and the reasoning engine (a disabled one is simply not wired).
    dependsOn: ['llm', 'codeSearch', 'reasoning'],
    tokenEnv: ['TASK_AGENT_API_TOKEN'],
  },
  stt: {
    title: 'Speech to text',
    description:
      'Transcribes WAV/MP3/OGG: whisper.cpp on Whisper base (vi, en) and pocketsphinx (English) kept warm.',
    dir: 'stt',
    port: 8011,
    concurrency: 2,
    gpu: false,
    model: 'stt-whisper-base',
    dependsOn: [],
    tokenEnv: ['STT_API_TOKEN'],
  },
  ocr: {
    title: 'OCR',
    description:
      'Reads Vietnamese and English text with line boxes from images, scans and PDF pages (tesseract).',
    dir: 'ocr',
    port: 8012,
    concurrency: 2,
    gpu: false,
    model: null,
    dependsOn: [],
    tokenEnv: ['OCR_API_TOKEN'],
  },
  tts: {
    title: 'Text to speech',
    description:
      'Speaks Vietnamese and English for the agent: espeak-ng, or Piper neural voices; WAV or MP3, raw or base64.',
    dir: 'tts',
    port: 8013,
    concurrency: 2,
    gpu: false,
    model: 'tts-voice-en',
    extraModels: ['tts-voice-en-config'],
    dependsOn: [],
    tokenEnv: ['TTS_API_TOKEN'],
  },
  codeSearch: {
    title: 'Medical code search',
    description:
      'Finds ICD-10, procedure and imported codes from Vietnamese or English text: BM25, fused with embeddings.',
    dir: 'codesearch',
    port: 8014,
    concurrency: 16,
    gpu: false,
    model: 'codesearch-e5',
    extraModels: ['codesearch-e5-tokenizer', 'codesearch-icd10cm', 'codesearch-icd10pcs'],
    dependsOn: [],
    tokenEnv: ['CODE_SEARCH_API_TOKEN'],
  },
  patientSim: {
    title: 'Patient simulator',
    description: 'An LLM plays a patient from a case file, revealing findings only when asked (vi/en).',
    dir: 'patient-sim',
    port: 8015,
    concurrency: 8,
    gpu: false,
    model: null,
    dependsOn: ['llm'],
    tokenEnv: ['PATIENT_SIM_API_TOKEN'],
  },
};

/** `codeSearch` → `CODE_SEARCH`. */
export function screamingSnake(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

export const COMPONENTS: Readonly<Record<ComponentKey, Component>> = Object.freeze(
  Object.fromEntries(
    COMPONENT_KEYS.map((key) => [
      key,
      Object.freeze({
        key,
        ...ROWS[key],
        entry: ROWS[key].entry ?? 'dist/main.js',
        urlEnv: `${screamingSnake(key)}_URL`,
      }),
    ]),
  ) as Record<ComponentKey, Component>,
);

/** Every token env var some component accepts, in catalogue order, without duplicates. */
export const TOKEN_ENV_NAMES: readonly string[] = [
  ...new Set(COMPONENT_KEYS.flatMap((key) => COMPONENTS[key].tokenEnv)),
];

export function isComponentKey(value: string): value is ComponentKey {
  return (COMPONENT_KEYS as readonly string[]).includes(value);
}
