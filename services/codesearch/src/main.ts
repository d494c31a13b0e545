import { runMain, serve } from '@clinicalsuite/kit';
import { buildCodesearchApp } from './app.js';
import { loadCodesearchConfig } from './config.js';

runMain(async () => {
  // Listening first: probes answer 503 with the reason while the code sets load.
  await serve(buildCodesearchApp({ config: loadCodesearchConfig() }).kit);
});
