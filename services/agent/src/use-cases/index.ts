import { IntentDetector } from '../domain/intent/index.js';
import { audioFullConsultUseCase } from './audio-full-consult.js';
import { audioToDiagnosisUseCase } from './audio-to-diagnosis.js';
import { capabilitiesUseCase } from './capabilities.js';
import { chatCompletionUseCase } from './chat-completion.js';
import { codeSearchUseCase } from './code-search.js';
import { documentOcrUseCase } from './document-ocr.js';
import { faceRecognitionUseCase } from './face-recognition.js';
import { fixedTurnUseCase } from './fixed-turn.js';
import { imageFullAnalysisUseCase } from './image-full-analysis.js';
import { imageToCodesUseCase } from './image-to-codes.js';
import { faceAction, intentActions } from './intent-actions.js';
import { messageUseCase } from './message.js';
import { messageWithFileUseCase } from './message-with-file.js';
import { modelsUseCase } from './models.js';
import { patientTalkUseCase } from './patient-talk.js';
import type { UseCaseDeps } from './ports.js';
import { rawChatUseCase } from './raw-chat.js';
import { sessionsUseCase } from './sessions.js';
import { shellCommandUseCase } from './shell-command.js';
import { speechUseCase } from './speech.js';
import { statusUseCase } from './status.js';
import { summaryUseCase } from './summary.js';
import { transcriptionUseCase } from './transcription.js';
import { translationUseCase } from './translation.js';

export type { Call, Transport, UseCaseDeps } from './ports.js';

/** The agent's use cases on its adapters (app.ts); the routes call them. */
export function createUseCases(deps: UseCaseDeps) {
  const { logger } = deps;
  const intents = new IntentDetector({
    router: deps.router,
    useLlm: deps.config.AGENT_INTENT_LLM,
    // Never the message: it is clinical data.
    onClassifierError: (error) =>
      logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'intent classifier failed: rules decide',
      ),
  });
  const withActions = { ...deps, intents, actions: intentActions(deps.subservices, deps.shell) };
  return {
    message: messageUseCase(withActions),
    messageWithFile: messageWithFileUseCase({ ...withActions, face: faceAction(deps.subservices) }),
    fixedTurn: fixedTurnUseCase(deps),
    translate: translationUseCase(deps),
    summarize: summaryUseCase(deps),
    transcribe: transcriptionUseCase(deps),
    readDocument: documentOcrUseCase(deps),
    recognizeFaces: faceRecognitionUseCase(deps),
    speak: speechUseCase(deps),
    searchCodes: codeSearchUseCase(deps),
    talkToPatient: patientTalkUseCase(deps),
    pipelines: {
      audioToDiagnosis: audioToDiagnosisUseCase(deps),
      audioFullConsult: audioFullConsultUseCase(deps),
      imageToCodes: imageToCodesUseCase(deps),
      imageFullAnalysis: imageFullAnalysisUseCase(deps),
    },
    chatCompletion: chatCompletionUseCase(deps),
    rawChat: rawChatUseCase(deps),
    models: modelsUseCase(deps),
    shellCommand: shellCommandUseCase(deps),
    sessions: sessionsUseCase(deps),
    status: statusUseCase(deps),
    capabilities: capabilitiesUseCase(deps),
  };
}

export type AgentUseCases = ReturnType<typeof createUseCases>;
