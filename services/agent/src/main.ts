import { runMain, serve } from '@clinicalsuite/kit';
import { buildAgentApp } from './app.js';
import { loadAgentConfig } from './config.js';

runMain(async () => {
  // Listening first: /health answers 503 with the reason until an LLM upstream answers.
  await serve(buildAgentApp({ config: loadAgentConfig() }).kit);
});
