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
  readonly pattern: RegExp;
}

// A command position: the start, after a separator, or after a wrapper that runs its arguments.
const AT_COMMAND = String.raw`(?:^|[;&|()\x60{}]|\$\(|\b(?:sudo|doas|exec|env|nohup|xargs|nice|then|do|time|command|busybox|eval)\b)\s*`;
// The rest of one simple command (up to a separator).
const REST = String.raw`[^;&|\n]*`;
// A path argument that is the root, everything under it, home, or the root's parent.
const ROOT_TARGET = String.raw`\s(?:\/+\.{0,2}\/*\*?|~\/?\*?|\$\{?home\}?\/?\*?)(?=\s|$|[;&|])`;

// JavaScript's \b and \w are ASCII-only: `sử` would hold the word `su`. Patterns are written with
// \b and \w and compiled with Unicode-aware equivalents.
const W = String.raw`[\p{L}\p{M}\p{N}_]`;
const BOUNDARY = `(?:(?<=${W})(?!${W})|(?<!${W})(?=${W}))`;

const rule = (id: string, description: string, pattern: string): DenyRule => ({
  id,
  description,
  pattern: new RegExp(pattern.replaceAll(String.raw`\b`, BOUNDARY).replaceAll(String.raw`\w`, W), 'u'),
});

export const DENY_RULES: readonly DenyRule[] = [
  rule(
    'rm_root',
    'recursive delete of the root or of a home directory',
    String.raw`\brm\b${REST}${ROOT_TARGET}`,
  ),
  rule('no_preserve_root', 'delete with --no-preserve-root', String.raw`--no-preserve-root\b`),
  rule(
    'mkfs',
    'filesystem creation or disk partitioning',
    String.raw`\b(?:mkfs(?:\.\w+)?|mke2fs|mkswap|mkdosfs|wipefs|s?fdisk|cfdisk|parted|blkdiscard)\b`,
  ),
  rule('dd_device', 'dd writing to a device', String.raw`\bdd\b${REST}\bof=\s*\/dev\/`),
  rule('fork_bomb', 'a shell function definition (fork bomb)', String.raw`\(\s*\)\s*\{|:\s*\|\s*:\s*&`),
  rule(
    'shutdown',
    'shutdown, reboot, halt or power-off',
    String.raw`${AT_COMMAND}(?:shutdown|reboot|halt|poweroff|telinit)\b|\binit\s+[0-6sS]\b|\bsystemctl\s+(?:poweroff|reboot|halt|kexec|suspend|hibernate|emergency|rescue|isolate)\b`,
  ),
  rule(
    'chmod_root',
    'permission change of the root or recursive chmod 777',
    String.raw`\bchmod\b${REST}${ROOT_TARGET}|\bchmod\b${REST}(?:\s-\w*r\w*|--recursive)\b${REST}\b0?777\b`,
  ),
  rule(
    'chown_recursive',
    'recursive ownership change',
    String.raw`\bchown\b${REST}(?:\s-\w*r\w*\b|--recursive\b|${ROOT_TARGET})`,
  ),
  rule('device_write', 'a write to a device', String.raw`>\s*\/dev\/`),
  rule(
    'raw_device',
    'a raw disk or memory device',
    String.raw`\/dev\/(?:sd|hd|nvme|vd|xvd|mmcblk|md\d|dm-|loop|mapper\/|disk\/|mem\b|kmem\b|port\b)`,
  ),
  rule(
    'download_to_shell',
    'a download piped to a shell',
    String.raw`\b(?:curl|wget|fetch)\b[^\n]*\|\s*(?:sudo\s+)?(?:ba|da|z|k|c|tc|fi|a)?sh\b|\b(?:ba|da|z|k)?sh\b[^\n]*<\s*\(\s*(?:curl|wget)\b`,
  ),
  rule('move_to_null', 'a move to /dev/null', String.raw`\bmv\b${REST}\s\/dev\/null\b`),
  rule(
    'kill_all',
    'killing every process',
    String.raw`\b(?:kill|pkill|killall)\b${REST}\s-(?:9\s+-|s\s+\w+\s+-|kill\s+-)?1(?:\s|$)|\bkillall5?\b`,
  ),
  rule('system_accounts', 'the system account files', String.raw`\/etc\/(?:passwd|shadow|gshadow|sudoers)\b`),
  rule('crontab_remove', 'removing the crontab', String.raw`\bcrontab\s+-\w*r`),
  rule('privilege', 'privilege escalation', String.raw`${AT_COMMAND}(?:sudo|su|doas|pkexec|runuser)\b`),
  rule(
    'find_exec',
    'find running a command or deleting',
    String.raw`\bfind\b[^\n]*\s-(?:exec|execdir|ok|okdir|delete)\b`,
  ),
  rule(
    'kernel_modules',
    'loading or removing kernel modules',
    String.raw`${AT_COMMAND}(?:insmod|rmmod|modprobe)\b`,
  ),
];

/** The first deny rule `text` matches (on its skeleton), or undefined. */
export function matchDenylist(text: string): DenyRule | undefined {
  const normal = skeleton(text.replace(/\p{Cc}/gu, ' ')).replace(/ +/g, ' ');
  return DENY_RULES.find((r) => r.pattern.test(normal));
}
