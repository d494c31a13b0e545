import { runMain, serve } from '@clinicalsuite/kit';
import { buildMedllmApp } from './app.js';
import { loadMedllmConfig } from './config.js';

runMain(async () => {
  // Listening first: /health answers 502 with the reason while llama-server loads.
  await serve(buildMedllmApp({ config: loadMedllmConfig() }).kit);
});
