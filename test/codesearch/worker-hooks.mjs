// Module hooks for worker threads started by a test: they run the TypeScript sources, compiled by
// SWC as jest compiles the tests (jest.config.js), instead of a build that may be stale. A `.js`
// import with a `.ts` file beside it loads the `.ts`; `@clinicalsuite/kit[/x]` is the kit's source.
// Registered in the thread by `--import` (WORKER_EXEC_ARGV in helpers.ts).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import swc from '@swc/core';

const root = new URL('../../', import.meta.url);

export async function resolve(specifier, context, next) {
  const kit = /^@clinicalsuite\/kit(?:\/(.+))?$/.exec(specifier);
  if (kit !== null) {
    const url = new URL(`services/kit/src/${kit[1] === undefined ? '' : `${kit[1]}/`}index.ts`, root);
    return { url: url.href, shortCircuit: true };
  }
  if (specifier.endsWith('.js')) {
    const url = new URL(specifier, context.parentURL ?? root);
    if (url.protocol === 'file:' && !existsSync(url)) {
      const ts = new URL(url.href.replace(/\.js$/, '.ts'));
      if (existsSync(ts)) return { url: ts.href, shortCircuit: true };
    }
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context);
  const filename = fileURLToPath(url);
  const { code } = await swc.transform(await readFile(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  });
  return { format: 'module', source: code, shortCircuit: true };
}
