import { readFile } from 'node:fs/promises';
import { decodesOnCpu, type ModelDescription } from './engine.js';

/**
 * Whether the weights sit on huge pages. A decode on the CPU reads every weight once per step; read
 * into the process's memory (MODEL_MMAP), they can sit on 2 MiB transparent huge pages instead of
 * 4 KiB pages of a mapped file, and the decode spends less time in address translation (one
 * stream 1.1-1.2x faster: README, "Speed"). The kernel gives them only where glibc asks for them
 * (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which the operator and the local runner set) and the
 * host allows them (/sys/kernel/mm/transparent_hugepage/enabled not `never`).
 */

const SMAPS_ROLLUP = '/proc/self/smaps_rollup';
const THP_MODE = '/sys/kernel/mm/transparent_hugepage/enabled';
/** The tunable that makes glibc's malloc ask for transparent huge pages. */
export const HUGE_PAGES_TUNABLE = 'glibc.malloc.hugetlb=1';

/** The process's anonymous memory on transparent huge pages, in bytes; null where unreadable. */
export async function hugePagesBytes(path = SMAPS_ROLLUP): Promise<number | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  const match = text === null ? null : /^AnonHugePages:\s+(\d+) kB$/m.exec(text);
  return match === null ? null : Number(match[1]) * 1024;
}

/** The host's transparent huge page mode (`always`, `madvise`, `never`), or null where unreadable. */
export async function transparentHugePages(path = THP_MODE): Promise<string | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  return text === null ? null : (/\[(\w+)\]/.exec(text)?.[1] ?? null);
}

export interface HugePagesFacts {
  readonly hugePagesBytes: number | null;
  readonly mode: string | null;
  /** GLIBC_TUNABLES as the process started with it. */
  readonly tunables: string | undefined;
}

/**
 * Why a CPU decode's weights are not on huge pages, or null when they are (or it does not apply:
 * a GPU decode, a mapped file, a system without /proc).
 */
export function hugePagesWarning(model: ModelDescription, facts: HugePagesFacts): string | null {
  if (!decodesOnCpu(model) || model.mapped || facts.hugePagesBytes === null || model.sizeBytes === null)
    return null;
  if (facts.hugePagesBytes >= model.sizeBytes / 2) return null;
  const cause =
    facts.mode === 'never'
      ? `the host has transparent huge pages off (${THP_MODE}: never)`
      : facts.mode === 'madvise' && !(facts.tunables ?? '').includes(HUGE_PAGES_TUNABLE)
        ? `the service was started without GLIBC_TUNABLES=${HUGE_PAGES_TUNABLE} (the operator and the local runner set it)`
        : 'the kernel had too few free huge pages (fragmented memory)';
  const mib = (bytes: number): string => `${String(Math.round(bytes / 2 ** 20))} MiB`;
  return (
    `the weights are read into memory for the CPU decode, but only ${mib(facts.hugePagesBytes)} of the ` +
    `process sits on huge pages against ${mib(model.sizeBytes)} of weights: ${cause}. Decoding is ` +
    'slower without them (services/llm/README.md, Speed)'
  );
}
