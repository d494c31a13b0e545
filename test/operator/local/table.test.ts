import { describe, expect, it } from '@jest/globals';
import { renderTable, restartingState } from '../../../operator/src/local/table.js';

describe('renderTable', () => {
  it('aligns columns and leaves no trailing spaces', () => {
    const text = renderTable([
      { name: 'llm', url: 'http://127.0.0.1:8001', state: 'ready', pid: 123, restarts: 0, detail: '' },
      {
        name: 'codeSearch',
        url: 'http://127.0.0.1:8014',
        state: 'missing',
        pid: null,
        restarts: 0,
        detail: 'services/codesearch is not built or not part of this checkout',
      },
      {
        name: 'stt',
        url: 'http://127.0.0.1:8011',
        state: restartingState(2000, { code: 1, signal: null }),
        pid: null,
        restarts: 3,
        detail: '',
      },
    ]);
    expect(text).toBe(
      [
        'NAME        URL                    STATE                           PID  RESTARTS  DETAIL',
        'llm         http://127.0.0.1:8001  ready                           123  0',
        'codeSearch  http://127.0.0.1:8014  missing                         -    0         services/codesearch is not built or not part of this checkout',
        'stt         http://127.0.0.1:8011  restarting in 2s (exit code 1)  -    3',
      ].join('\n'),
    );
  });

  it('renders only the header for no rows', () => {
    expect(renderTable([])).toBe('NAME  URL  STATE  PID  RESTARTS  DETAIL');
  });
});

describe('restartingState', () => {
  it.each([
    [1000, { code: 1, signal: null }, 'restarting in 1s (exit code 1)'],
    [30_000, { code: null, signal: 'SIGKILL' }, 'restarting in 30s (signal SIGKILL)'],
    [1500, { code: 0, signal: null }, 'restarting in 1.5s (exit code 0)'],
    [200, { code: null, signal: 'SIGSEGV' }, 'restarting in 200ms (signal SIGSEGV)'],
  ])('%d ms %j', (delay, exit, text) => expect(restartingState(delay, exit)).toBe(text));
});
