import { runMain, serve } from '@clinicalsuite/kit';
import { buildTaskProxyApp } from './app.js';
import { loadTaskProxyConfig } from './config.js';

runMain(async () => {
  const { config, password } = loadTaskProxyConfig();
  // The plain-text password lives only until the users are loaded and it is hashed.
  delete process.env['TASK_PROXY_PASSWORD'];
  // Listening first: /health answers 503 with the reason until the users are loaded.
  await serve(buildTaskProxyApp({ config, password }).kit);
});
