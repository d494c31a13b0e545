/**
 * What the policy knows about programs, whatever SHELL_ALLOWLIST says:
 *
 * - `NEVER_RUN`: programs that run other programs or interpret code (shells, `env`, `xargs`,
 *   interpreters, `sed`/`awk`, pagers and editors with shell escapes), switch users, reach the
 *   network or wreck the machine. Allowlisting one of them would hand out a shell, so they are
 *   refused even when listed (the agent warns about them at start-up).
 * - `OPTION_RULES`: per-program arguments that write files, run programs or change the system, for
 *   programs that are otherwise read-only (`sort -o`, `sort --compress-program`, `find -exec`,
 *   `date -s`, `uniq IN OUT`, `nvidia-smi` settings).
 */

const NEVER_GROUPS: readonly (readonly [reason: string, names: string])[] = [
  [
    'is a shell or runs other programs',
    'sh bash dash zsh ksh mksh pdksh csh tcsh fish ash rbash busybox toybox env xargs nice nohup timeout ' +
      'stdbuf setsid chroot unshare nsenter ionice taskset chrt flock script watch time strace ltrace gdb ' +
      'systemd-run at batch crontab parallel exec eval command builtin source . sudo su doas pkexec runuser ' +
      'setpriv capsh ssh-agent dbus-launch',
  ],
  [
    'interprets code',
    'python python2 python3 perl ruby node nodejs deno bun php lua luajit tclsh wish expect awk gawk mawk ' +
      'nawk sed gsed jq yq dc bc R Rscript java jshell make cmake ninja gcc cc g++ clang ld as',
  ],
  ['has a shell escape', 'less more most man pg vi vim nvim view ex ed nano pico emacs mc git tmux screen'],
  [
    'reaches the network or archives files',
    'curl wget nc ncat netcat socat telnet ssh scp sftp ftp rsync tar cpio zip unzip gzip gunzip bzip2 ' +
      'xz zstd 7z',
  ],
  [
    'changes the system',
    'mkfs mke2fs mkswap wipefs fdisk sfdisk cfdisk parted blkdiscard mount umount swapon swapoff shutdown ' +
      'reboot halt poweroff init telinit systemctl service kill killall killall5 pkill insmod rmmod modprobe ' +
      'sysctl iptables nft ip ifconfig route useradd userdel usermod passwd chpasswd visudo shred',
  ],
];

const NEVER: ReadonlyMap<string, string> = new Map(
  NEVER_GROUPS.flatMap(([reason, names]) => names.split(' ').map((n) => [n, reason] as const)),
);

/** Why `program` is never run (whatever the allowlist says), or undefined. */
export function neverRunReason(program: string): string | undefined {
  if (/^mkfs\./.test(program)) return 'changes the system';
  return NEVER.get(program);
}

/** Every name that is never run (for start-up warnings and the translator's exclusions). */
export const NEVER_RUN: readonly string[] = [...NEVER.keys()];

// Program names that are also everyday words: a request starting with one may be natural language.
const ENGLISH_WORDS = new Set(
  (
    'at time watch make more less man view script source command exec find service route kill halt init ' +
    'batch parallel expect screen mount nice timeout ip as ed ex pg bc dc mc cc ld ash fish . R'
  ).split(' '),
);

/**
 * Program names that, first in a request, make it a command rather than natural language (so it is
 * refused at once, naming the reason, instead of being sent to the translator): the never-run
 * programs that are not everyday words, and common programs that change files.
 */
export const COMMAND_WORDS: ReadonlySet<string> = new Set([
  ...NEVER_RUN.filter((n) => !ENGLISH_WORDS.has(n)),
  ...'rm rmdir unlink dd chmod chown chgrp cp mv ln mkdir touch truncate install tee printenv id whoami'.split(
    ' ',
  ),
]);

export interface OptionRule {
  /** Short option letters refused anywhere in a `-abc` cluster. */
  readonly deniedShort?: string;
  /** Long options refused, also by any abbreviation GNU getopt would accept (`--out` for `--output`). */
  readonly deniedLong?: readonly string[];
  /** Whole words refused (find's single-dash primaries). */
  readonly deniedWords?: readonly string[];
  /** At most this many operands (non-option arguments); options that take a value are below. */
  readonly maxOperands?: number;
  readonly valueShort?: string;
  readonly valueLong?: readonly string[];
  /** When set, every argument must be one of these options or a value following one of `valueShort`. */
  readonly onlyOptions?: readonly string[];
  /** Why (shown when an argument is refused). */
  readonly why: string;
}

export const OPTION_RULES: Readonly<Record<string, OptionRule>> = {
  sort: {
    deniedShort: 'oT',
    deniedLong: ['output', 'compress-program', 'temporary-directory', 'files0-from'],
    why: 'writes files, runs a compression program or reads a list of file names',
  },
  wc: { deniedLong: ['files0-from'], why: 'reads a list of file names' },
  du: { deniedLong: ['files0-from'], why: 'reads a list of file names' },
  uniq: {
    maxOperands: 1,
    valueShort: 'fsw',
    valueLong: ['skip-fields', 'skip-chars', 'check-chars'],
    why: 'a second operand is an output file',
  },
  date: { deniedShort: 's', deniedLong: ['set'], why: 'sets the clock' },
  find: {
    deniedWords: ['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'],
    why: 'runs commands, deletes or writes files',
  },
  'nvidia-smi': {
    onlyOptions: [
      '-L',
      '--list-gpus',
      '-q',
      '--query',
      '-x',
      '--xml-format',
      '-u',
      '--unit',
      '-B',
      '--list-excluded-gpus',
      '-h',
      '--help',
      '-i',
      '--id',
      '-d',
      '--display',
      '--query-gpu',
      '--query-compute-apps',
      '--format',
    ],
    valueShort: 'id',
    valueLong: ['id', 'display'],
    why: 'only queries are allowed (no settings, resets or output files)',
  },
};

/** Why one of `args` is refused for `program` (by `OPTION_RULES`), or undefined. */
export function checkOptions(program: string, args: readonly string[]): string | undefined {
  const rule = OPTION_RULES[program];
  if (rule === undefined) return undefined;
  let operands = 0;
  let afterDashes = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (afterDashes || arg === '-' || !arg.startsWith('-')) {
      if (rule.onlyOptions !== undefined) return `${quoteArg(arg)} is not accepted: ${rule.why}`;
      operands++;
      if (rule.maxOperands !== undefined && operands > rule.maxOperands) {
        return `more than ${rule.maxOperands} operand(s): ${rule.why}`;
      }
      continue;
    }
    if (arg === '--') {
      if (rule.onlyOptions !== undefined) return `"--" is not accepted: ${rule.why}`;
      afterDashes = true;
      continue;
    }
    if (rule.deniedWords?.includes(arg) === true) return `${quoteArg(arg)} is not accepted: ${rule.why}`;
    if (arg.startsWith('--')) {
      const name = arg.slice(2).split('=')[0] ?? '';
      if (rule.deniedLong?.some((d) => d.startsWith(name)) === true) {
        return `${quoteArg(`--${name}`)} is not accepted: ${rule.why}`;
      }
      if (rule.onlyOptions !== undefined && !rule.onlyOptions.includes(`--${name}`)) {
        return `${quoteArg(`--${name}`)} is not accepted: ${rule.why}`;
      }
      if (rule.valueLong?.includes(name) === true && !arg.includes('=')) i++;
      continue;
    }
    if (rule.onlyOptions !== undefined) {
      if (!rule.onlyOptions.includes(arg)) return `${quoteArg(arg)} is not accepted: ${rule.why}`;
      if (rule.valueShort?.includes(arg.slice(1)) === true) i++;
      continue;
    }
    if (program === 'find') continue; // find's primaries are words, not letter clusters
    const letters = arg.slice(1);
    for (let j = 0; j < letters.length; j++) {
      const letter = letters[j] ?? '';
      if (rule.deniedShort?.includes(letter) === true) {
        return `${quoteArg(`-${letter}`)} is not accepted: ${rule.why}`;
      }
      if (rule.valueShort?.includes(letter) === true) {
        if (j === letters.length - 1) i++; // the value is the next argument
        break; // the rest of the cluster is the value
      }
    }
  }
  return undefined;
}

function quoteArg(arg: string): string {
  return JSON.stringify(arg.length > 40 ? `${arg.slice(0, 40)}…` : arg);
}
