/**
 * The text LLM's entry, `dist/boot.cjs`: the runner and the operator start this file. It is
 * CommonJS so that it runs before anything starts libuv's thread pool. It sizes the pool for where
 * decoding will run (thread-pool.ts), then loads the service. A UV_THREADPOOL_SIZE that is already
 * set is left as it is.
 */
type ThreadPool = typeof import('./thread-pool.js');

try {
  // require() of an ES module loads it synchronously (Node 20.19 and later), before anything
  // starts the pool.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const threadPool = require('./thread-pool.js') as ThreadPool;
  const choice = threadPool.threadPoolChoice(process.env);
  if (!choice.given) process.env['UV_THREADPOOL_SIZE'] = String(choice.size);
} catch (err) {
  // An older Node: libuv keeps its default, and the service warns once the model is loaded.
  process.emitWarning(`the text LLM could not size libuv's thread pool: ${String(err)}`);
}
void import('./main.js');
