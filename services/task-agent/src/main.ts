import { runMain, serve } from '@clinicalsuite/kit';
import { buildTaskAgentApp } from './app.js';
import { loadTaskAgentConfig } from './config.js';

runMain(async () => {
  // Listening first: /health answers 503 with the reason until the store is open.
  await serve(buildTaskAgentApp({ config: loadTaskAgentConfig() }).kit);
});
