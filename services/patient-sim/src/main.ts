import { runMain, serve } from '@clinicalsuite/kit';
import { buildPatientSimApp } from './app.js';
import { loadPatientSimConfig } from './config.js';

runMain(async () => {
  // Listening first: /health answers 503 with the reason until the LLM does.
  await serve(buildPatientSimApp({ config: loadPatientSimConfig() }).kit);
});
