import { runMain, serve } from '@clinicalsuite/kit';
import { buildOcrApp } from './app.js';
import { loadOcrConfig } from './config.js';

runMain(async () => {
  // Listening first: probes answer (503 with the reason) while tesseract is looked for and warmed.
  await serve(buildOcrApp({ config: loadOcrConfig() }).kit);
});
