import { runMain, serve } from '@clinicalsuite/kit';
import { buildTaskProxyApp } from './app.js';
import { loadTaskProxyConfig } from './config.js';

runMain(async () => {
  const { config, password } = loadTaskProxyConfig();
  // The plain-text password lives only until start() has hashed it.
  delete process.env['TASK_PROXY_PASSWORD'];
  const service = buildTaskProxyApp({ config, password });
  await serve(service.kit, { onShutdown: () => service.close() });
  // Listening first: /health answers 503 with the reason until the users are loaded.
  await service.start();
});
