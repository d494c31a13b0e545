import { runMain, serve } from '@clinicalsuite/kit';
import { buildLlmApp } from './app.js';
import { loadLlmConfig } from './config.js';

runMain(async () => {
  // Listening first: probes answer 503 with the reason while the model loads.
  await serve(buildLlmApp({ config: loadLlmConfig() }).kit);
});
