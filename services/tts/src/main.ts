import { runMain, serve } from '@clinicalsuite/kit';
import { buildTtsApp } from './app.js';
import { loadTtsConfig } from './config.js';

runMain(async () => {
  // Listening first: probes answer (503 with the reason) while espeak-ng is checked and voices load.
  await serve(buildTtsApp({ config: loadTtsConfig() }).kit);
});
