import type { PatientRequest } from '../domain/subservices.js';
import type { Call } from './ports.js';
import { StepTimer, finishTiming, type StepDeps } from './steps.js';

/**
 * `/patient`: a clinician's words to a simulated patient (the patient_sim sub-service), its answer
 * with the model the simulator used; the agent's own LLMs are not used.
 */

export function patientTalkUseCase(deps: Pick<StepDeps, 'metrics' | 'subservices'>) {
  return async (input: PatientRequest, call: Pick<Call, 'signal' | 'since'>) => {
    deps.metrics.intents.inc({ intent: 'patient_sim', source: 'fixed' });
    const timer = new StepTimer(deps, null);
    const turn = await timer.run('patient', { subservice: 'patient_sim' }, () =>
      deps.subservices.patient(input, call.signal),
    );
    const { model: patientModel, processing_time_ms: _simulatorMs, ...rest } = turn;
    return {
      ...rest,
      intent: 'patient_sim' as const,
      model: null,
      patient_model: patientModel ?? null,
      processing_time_ms: finishTiming(deps, call.since, timer),
    };
  };
}
