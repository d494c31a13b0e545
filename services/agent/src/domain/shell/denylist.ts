import { skeleton } from './characters.js';

/**
 * The spec's dangerous commands, checked as defence in depth on the raw request text (a command or a
 * natural-language request) and on every argv about to run. The allowlist, the parser and the
 * argument rules already stop all of these; this list names the danger when someone tries, and keeps
 * stopping them if the allowlist is ever widened carelessly.
 *
 * Matching is done on the text's skeleton (NFKC, invisible characters removed, Cyrillic/Greek
 * look-alikes mapped to Latin, lower case), so `ｒｍ -rf /` or `r\u200bm -rf /` match like `rm -rf /`.
 */

export interface DenyRule {
  /** Stable, bounded name (logged and shown). */
  readonly id: string;
  readonly description: string;
  /** Whether the rule matches a skeleton (see `matchDenylist`). */
  readonly matches: (normal: string) => boolean;
}

// A command position: the start, after a separator, or after a wrapper that runs its arguments.
const AT_COMMAND = String.raw`(?:^|[;&|()\x60{}]|\$\(|\b(?:sudo|doas|exec|env|nohup|xargs|nice|then|do|time|command|busybox|eval)\b)\s*`;
// A path argument that is the root, everything under it, home, or the root's parent.
const ROOT_TARGET = String.raw`\s(?:\/+(?:\.{1,2}\/*)?\*?|~\/?\*?|\$\{?home\}?\/?\*?)(?=\s|$|[;&|])`;

// JavaScript's \b and \w are ASCII-only: `sử` would hold the word `su`. Patterns are written with
// \b and \w and compiled with Unicode-aware equivalents.
const W = String.raw`[\p{L}\p{M}\p{N}_]`;
const BOUNDARY = `(?:(?<=${W})(?!${W})|(?<!${W})(?=${W}))`;
const re = (pattern: string): RegExp =>
  new RegExp(pattern.replaceAll(String.raw`\b`, BOUNDARY).replaceAll(String.raw`\w`, W), 'gu');

/**
 * Matches when the patterns occur in this order, each after the previous one's match, within one
 * simple command (`command`: up to `;`, `&` or `|`) or anywhere (`text`). Searching part by part
 * keeps every rule linear in the text's length (one regex `a[^;]*b` is quadratic on `a a a a ...`).
 */
function inOrder(scope: 'command' | 'text', ...patterns: string[]): (normal: string) => boolean {
  const parts = patterns.map(re);
  return (normal) => {
    const pieces = scope === 'command' ? normal.split(/[;&|]/) : [normal];
    return pieces.some((piece) => {
      let from = 0;
      for (const part of parts) {
        part.lastIndex = from;
        const m = part.exec(piece);
        if (m === null) return false;
        from = m.index + m[0].length;
      }
      return true;
    });
  };
}

const anyOf =
  (...tests: ((normal: string) => boolean)[]) =>
  (normal: string): boolean =>
    tests.some((t) => t(normal));

const rule = (id: string, description: string, matches: (normal: string) => boolean): DenyRule => ({
  id,
  description,
  matches,
});

export const DENY_RULES: readonly DenyRule[] = [
  rule(
    'rm_root',
    'recursive delete of the root or of a home directory',
    inOrder('command', String.raw`\brm\b`, ROOT_TARGET),
  ),
  rule(
    'no_preserve_root',
    'delete with --no-preserve-root',
    inOrder('text', String.raw`--no-preserve-root\b`),
  ),
  rule(
    'mkfs',
    'filesystem creation or disk partitioning',
    inOrder(
      'text',
      String.raw`\b(?:mkfs(?:\.\w+)?|mke2fs|mkswap|mkdosfs|wipefs|s?fdisk|cfdisk|parted|blkdiscard)\b`,
    ),
  ),
  rule(
    'dd_device',
    'dd writing to a device',
    inOrder('command', String.raw`\bdd\b`, String.raw`\bof=\s*\/dev\/`),
  ),
  rule(
    'fork_bomb',
    'a shell function definition (fork bomb)',
    inOrder('text', String.raw`\(\s*\)\s*\{|:\s*\|\s*:\s*&`),
  ),
  rule(
    'shutdown',
    'shutdown, reboot, halt or power-off',
    inOrder(
      'text',
      String.raw`${AT_COMMAND}(?:shutdown|reboot|halt|poweroff|telinit)\b|\binit\s+[0-6s]\b|\bsystemctl\s+(?:poweroff|reboot|halt|kexec|suspend|hibernate|emergency|rescue|isolate)\b`,
    ),
  ),
  rule(
    'chmod_root',
    'permission change of the root or recursive chmod 777',
    anyOf(
      inOrder('command', String.raw`\bchmod\b`, ROOT_TARGET),
      inOrder(
        'command',
        String.raw`\bchmod\b`,
        String.raw`(?:\s-\w*r\w*|--recursive)\b`,
        String.raw`\b0?777\b`,
      ),
    ),
  ),
  rule(
    'chown_recursive',
    'recursive ownership change',
    inOrder('command', String.raw`\bchown\b`, String.raw`\s-\w*r\w*\b|--recursive\b|${ROOT_TARGET}`),
  ),
  rule('device_write', 'a write to a device', inOrder('text', String.raw`>\s*\/dev\/`)),
  rule(
    'raw_device',
    'a raw disk or memory device',
    inOrder(
      'text',
      String.raw`\/dev\/(?:sd|hd|nvme|vd|xvd|mmcblk|md\d|dm-|loop|mapper\/|disk\/|mem\b|kmem\b|port\b)`,
    ),
  ),
  rule(
    'download_to_shell',
    'a download piped to a shell',
    anyOf(
      inOrder(
        'text',
        String.raw`\b(?:curl|wget|fetch)\b`,
        String.raw`\|\s*(?:sudo\s+)?(?:ba|da|z|k|c|tc|fi|a)?sh\b`,
      ),
      inOrder('text', String.raw`\b(?:ba|da|z|k)?sh\b`, String.raw`<\s*\(\s*(?:curl|wget)\b`),
    ),
  ),
  rule(
    'move_to_null',
    'a move to /dev/null',
    inOrder('command', String.raw`\bmv\b`, String.raw`\s\/dev\/null\b`),
  ),
  rule(
    'kill_all',
    'killing every process',
    anyOf(
      inOrder(
        'command',
        String.raw`\b(?:kill|pkill|killall)\b`,
        String.raw`\s-(?:9\s+-|s\s+\w+\s+-|kill\s+-)?1(?:\s|$)`,
      ),
      inOrder('text', String.raw`\bkillall5?\b`),
    ),
  ),
  rule(
    'system_accounts',
    'the system account files',
    inOrder('text', String.raw`\/etc\/(?:passwd|shadow|gshadow|sudoers)\b`),
  ),
  rule('crontab_remove', 'removing the crontab', inOrder('text', String.raw`\bcrontab\s+-\w*r`)),
  rule(
    'privilege',
    'privilege escalation',
    inOrder('text', String.raw`${AT_COMMAND}(?:sudo|su|doas|pkexec|runuser)\b`),
  ),
  rule(
    'find_exec',
    'find running a command or deleting',
    inOrder('text', String.raw`\bfind\b`, String.raw`\s-(?:exec|execdir|ok|okdir|delete)\b`),
  ),
  rule(
    'kernel_modules',
    'loading or removing kernel modules',
    inOrder('text', String.raw`${AT_COMMAND}(?:insmod|rmmod|modprobe)\b`),
  ),
];

/** The skeleton the rules read: controls as spaces, then `skeleton`, runs of spaces as one. */
export function denylistText(text: string): string {
  return skeleton(text.replace(/\p{Cc}/gu, ' ')).replace(/\s+/gu, ' ');
}

/** The first deny rule `text` matches (on its skeleton), or undefined. */
export function matchDenylist(text: string): DenyRule | undefined {
  const normal = denylistText(text);
  return DENY_RULES.find((r) => r.matches(normal));
}
