import { defineRoute, NotFoundError, type AnyRoute } from '@clinicalsuite/kit';
import { PatientDetailSchema, PatientListSchema, PatientParamsSchema } from '../schemas/api.js';
import { FACT_CATEGORIES, FINDING_KINDS } from '../schemas/case.js';
import type { PatientSimRuntime, PlayableCase } from './runtime.js';

/** `GET /patients` and `GET /patients/{id}`: who can be talked to. Never the diagnosis or the facts. */

function summary(p: PlayableCase) {
  const c = p.case;
  return {
    id: c.id,
    title: c.title,
    language: c.language,
    demographics: c.demographics,
    chief_complaint: c.chief_complaint,
    facts: c.facts.length,
    findings: c.findings.length,
    origin: p.origin,
  };
}

export function unknownPatient(rt: PatientSimRuntime, id: string): NotFoundError {
  return new NotFoundError(`Unknown patient_id "${id}"; valid ids: ${[...rt.cases.keys()].join(', ')}`, {
    param: 'patient_id',
  });
}

export function listPatientsRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/patients',
    summary: 'The cases that can be played, without their diagnoses',
    tags: ['patients'],
    response: PatientListSchema,
    handler: () => {
      const patients = [...rt.cases.values()].map(summary);
      return { patients, total: patients.length };
    },
  });
}

export function getPatientRoute(rt: PatientSimRuntime): AnyRoute {
  return defineRoute({
    method: 'get',
    path: '/patients/:patient_id',
    summary: 'One case: the patient, their complaint, what can be asked (counts)',
    description:
      'The facts, findings, diagnosis and the case’s sources (which would name the diagnosis) stay hidden: ' +
      'they are learnt by talking to the patient, or read in the case file.',
    tags: ['patients'],
    params: PatientParamsSchema,
    response: PatientDetailSchema,
    responses: { 404: { description: 'No such patient; the message lists the valid ids' } },
    handler: ({ params }) => {
      const p = rt.cases.get(params.patient_id);
      if (p === undefined) throw unknownPatient(rt, params.patient_id);
      const askable: Record<string, number> = {};
      for (const category of FACT_CATEGORIES) {
        const n = p.case.facts.filter((f) => f.category === category).length;
        if (n > 0) askable[category] = n;
      }
      for (const kind of FINDING_KINDS) {
        const n = p.case.findings.filter((f) => f.kind === kind).length;
        if (n > 0) askable[kind] = n;
      }
      return {
        ...summary(p),
        persona: { personality: p.case.persona.personality, speech_style: p.case.persona.speech_style },
        askable,
      };
    },
  });
}
