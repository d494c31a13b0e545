import { runMain, serve } from '@clinicalsuite/kit';
import { buildSttApp } from './app.js';
import { loadSttConfig } from './config.js';

runMain(async () => {
  // Listening first: probes answer (503 with the reason) while the engines start.
  await serve(buildSttApp({ config: loadSttConfig() }).kit);
});
