import { RegExpParser, type AST } from '@eslint-community/regexpp';

/**
 * What recheck's automaton checker analyses in place of a JavaScript regex.
 *
 * The automaton checker is exact (no fuzzing, no clock) but models neither lookarounds nor
 * backreferences, and on large patterns its model of a backtracking search that stops at its first
 * match can take minutes. So a regex is analysed as its FULL SEARCH: the lowered pattern followed
 * by `$^`, which never matches (without the m flag), so the matcher explores every path at every
 * start position. That bounds what the real regex does on any input from above (the real search
 * stops at its first match: it explores a part of the same paths), and the checker decides it in
 * milliseconds. Lowering, each step sound for that bound:
 *
 * - a one-character lookbehind that begins every match becomes that character consumed (`(?<=C)`
 *   -> `C`, `(?<!C)` -> `(?:^|[^C])`), and a one-character lookahead that ends it likewise; `^` and
 *   `$` under the m flag too: the same search, shifted by one character (this keeps "starts only
 *   where a word starts" visible);
 * - a one-character lookaround that the characters the pattern reads beside it settle is dropped
 *   when it always holds there and becomes `[]` (a dead end) when it never does: `(?=\w)` before
 *   `\d+`, `(?<![\p{L}])` after a `t`. Where it does not hold, the next element fails on the same
 *   character at once;
 * - every other lookaround is erased: it only filters paths, and a body without an unbounded
 *   quantifier costs a constant each time. A lookaround whose body reads without bound is refused
 *   (its cost per position grows with the input: rewrite it);
 * - alternatives made of lookarounds no two of which can hold at the same place (the Unicode word
 *   boundary `(?:(?<=W)(?!W)|(?<!W)(?=W))`), once erased, are one path;
 * - g, y and d are dropped (a sticky regex is analysed as a scanning one, which does more).
 *
 * A regex that needed no erasure is also checked as it is (without `$^`) when its full search is
 * not linear: `\s+` always matches at once, so its real search is linear although its full search
 * is not. Backreferences are refused.
 */

export interface Lowered {
  /** The pattern to analyse (without the `$^` suffix). */
  readonly source: string;
  readonly flags: string;
  /** Whether anything that filters paths was erased: then only the full search is sound. */
  readonly erased: boolean;
}

export type LowerResult = Lowered | { readonly error: string };

const parser = new RegExpParser({ ecmaVersion: 2025 });

export function parse(source: string, flags: string): AST.Pattern {
  return parser.parsePattern(source, 0, source.length, {
    unicode: flags.includes('u'),
    unicodeSets: flags.includes('v'),
  });
}

type Node = AST.Node;

function children(n: Node): readonly Node[] {
  switch (n.type) {
    case 'Pattern':
    case 'Group':
    case 'CapturingGroup':
      return n.alternatives;
    case 'Assertion':
      return n.kind === 'lookahead' || n.kind === 'lookbehind' ? n.alternatives : [];
    case 'Alternative':
      return n.elements;
    case 'Quantifier':
      return [n.element];
    default:
      return [];
  }
}

function some(n: Node, pred: (m: Node) => boolean): boolean {
  return pred(n) || children(n).some((c) => some(c, pred));
}

function first(n: Node, pred: (m: Node) => boolean): Node | null {
  if (pred(n)) return n;
  for (const c of children(n)) {
    const found = first(c, pred);
    if (found !== null) return found;
  }
  return null;
}

/** The flags that change what a pattern matches (g, y, d and m are dealt with apart). */
const analysedFlags = (flags: string): string => flags.replace(/[^isuv]/g, '');

function isLookaround(n: Node): n is AST.LookaroundAssertion {
  return n.type === 'Assertion' && (n.kind === 'lookahead' || n.kind === 'lookbehind');
}

const unbounded = (n: Node): boolean => some(n, (m) => m.type === 'Quantifier' && m.max === Infinity);

function hex(code: number): string {
  return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`;
}

/** A lookaround whose body is one character (a class, a set such as `\d`, or a literal). */
function oneCharacterBody(
  look: AST.LookaroundAssertion,
): AST.Character | AST.CharacterSet | AST.CharacterClass | null {
  const alt = look.alternatives[0];
  if (look.alternatives.length !== 1 || alt?.elements.length !== 1) return null;
  const el = alt.elements[0]!;
  if (el.type === 'CharacterClass' && el.unicodeSets) return null;
  if (el.type === 'CharacterSet' && el.kind === 'any') return null;
  return el.type === 'Character' || el.type === 'CharacterSet' || el.type === 'CharacterClass' ? el : null;
}

/** That character as a pattern, or its complement; null when it cannot be written so. */
function characterPattern(
  el: AST.Character | AST.CharacterSet | AST.CharacterClass,
  complement: boolean,
  unicode: boolean,
): string | null {
  if (el.type === 'CharacterClass') {
    if (!complement) return el.raw;
    return el.negate ? `[${el.raw.slice(2)}` : `[^${el.raw.slice(1)}`;
  }
  if (el.type === 'CharacterSet') {
    if (el.kind === 'any') return null;
    if (!complement) return el.raw;
    if (el.kind === 'property')
      return el.raw.replace(/^\\([pP])/, (_m, p: string) => `\\${p === 'p' ? 'P' : 'p'}`);
    const letter = { digit: 'd', space: 's', word: 'w' }[el.kind];
    return `\\${el.negate ? letter : letter.toUpperCase()}`;
  }
  if (!unicode && el.value > 0xffff) return null;
  return complement ? `[^${hex(el.value)}]` : hex(el.value);
}

/** A lookbehind whose body is a fixed sequence of characters (`(?<=\p{L}\d)`), as that sequence. */
function fixedSequence(look: AST.LookaroundAssertion): string | null {
  const alt = look.alternatives[0];
  if (look.alternatives.length !== 1 || alt === undefined || alt.elements.length === 0) return null;
  const ok = alt.elements.every(
    (e) =>
      e.type === 'Character' ||
      (e.type === 'CharacterSet' && e.kind !== 'any') ||
      (e.type === 'CharacterClass' && !e.unicodeSets),
  );
  return ok ? alt.raw : null;
}

/** What a match can read next (or read last): characters, and whether the input may end (start) there. */
interface Edge {
  readonly atoms: readonly Atom[];
  readonly boundary: boolean;
}
/** One character a pattern reads; `any`: not worked out (a backreference). */
type Atom = AST.Character | AST.CharacterSet | AST.CharacterClass | 'any';

function nullable(n: Node): boolean {
  switch (n.type) {
    case 'Character':
    case 'CharacterSet':
    case 'CharacterClass':
      return false;
    case 'Alternative':
      return n.elements.every(nullable);
    case 'Group':
    case 'CapturingGroup':
    case 'Pattern':
      return n.alternatives.some(nullable);
    case 'Quantifier':
      return n.min === 0 || nullable(n.element);
    default:
      return true;
  }
}

/** The characters an element can read first (`dir` 1) or last (`dir` -1). */
function outerAtoms(n: Node, dir: 1 | -1): Atom[] {
  switch (n.type) {
    case 'Character':
    case 'CharacterSet':
    case 'CharacterClass':
      return [n];
    case 'Group':
    case 'CapturingGroup':
      return n.alternatives.flatMap(
        (a) => sequenceAtoms(a.elements, dir === 1 ? 0 : a.elements.length - 1, dir).atoms,
      );
    case 'Quantifier':
      return n.max === 0 ? [] : outerAtoms(n.element, dir);
    case 'Backreference':
      return ['any'];
    default:
      return [];
  }
}

/** The characters read first from `elements[from]` on in direction `dir`; `through`: all can be empty. */
function sequenceAtoms(
  elements: readonly Node[],
  from: number,
  dir: 1 | -1,
): { atoms: Atom[]; through: boolean } {
  const atoms: Atom[] = [];
  for (let i = from; i >= 0 && i < elements.length; i += dir) {
    const el = elements[i]!;
    atoms.push(...outerAtoms(el, dir));
    if (!nullable(el)) return { atoms, through: false };
  }
  return { atoms, through: true };
}

/** What a match can read right after (`dir` 1) or right before (`dir` -1) `node`. */
function beside(node: Node, dir: 1 | -1): Edge {
  const parent = node.parent;
  if (parent === null) return { atoms: [], boundary: true };
  if (parent.type === 'Alternative') {
    const i = parent.elements.indexOf(node as AST.Element);
    const r = sequenceAtoms(parent.elements, i + dir, dir);
    if (!r.through) return { atoms: r.atoms, boundary: false };
    const owner = parent.parent;
    if (owner.type === 'Pattern') return { atoms: r.atoms, boundary: true };
    // Inside a lookaround: not worked out.
    if (owner.type === 'Assertion') return { atoms: ['any'], boundary: true };
    const rest = beside(owner, dir);
    return { atoms: [...r.atoms, ...rest.atoms], boundary: rest.boundary };
  }
  if (parent.type === 'Quantifier') {
    const rest = beside(parent, dir);
    const again = parent.max > 1 ? outerAtoms(parent.element, dir) : [];
    return { atoms: [...again, ...rest.atoms], boundary: rest.boundary };
  }
  return { atoms: ['any'], boundary: true };
}

/** Characters a one-character pattern matches, as a membership test and, when few, a list. */
class CharacterSets {
  private static readonly bitmaps = new Map<string, Uint8Array>();
  private readonly matchers = new Map<string, RegExp>();
  private readonly unicode: boolean;

  constructor(private readonly flags: string) {
    this.unicode = flags.includes('u') || flags.includes('v');
  }

  private matcher(raw: string): RegExp {
    let re = this.matchers.get(raw);
    if (re === undefined) {
      re = new RegExp(`^(?:${raw})$`, analysedFlags(this.flags));
      this.matchers.set(raw, re);
    }
    return re;
  }

  /** Every code point (code unit without the u flag) the pattern matches. */
  private bitmap(raw: string): Uint8Array {
    const key = `${raw}/${this.flags}`;
    let map = CharacterSets.bitmaps.get(key);
    if (map === undefined) {
      const re = this.matcher(raw);
      const top = this.unicode ? 0x10ffff : 0xffff;
      map = new Uint8Array(top + 1);
      for (let cp = 0; cp <= top; cp++) {
        if (this.unicode && cp >= 0xd800 && cp <= 0xdfff) continue;
        if (re.test(String.fromCodePoint(cp))) map[cp] = 1;
      }
      CharacterSets.bitmaps.set(key, map);
    }
    return map;
  }

  /** The code points of an atom when it is a short explicit list (no i flag); else null. */
  private members(atom: Exclude<Atom, 'any'>): number[] | null {
    if (this.flags.includes('i')) return null;
    if (atom.type === 'Character') return [atom.value];
    if (atom.type !== 'CharacterClass' || atom.negate || atom.unicodeSets) return null;
    const out: number[] = [];
    for (const e of atom.elements) {
      if (e.type === 'Character') out.push(e.value);
      else if (e.type === 'CharacterClassRange' && e.max.value - e.min.value < 4096)
        for (let c = e.min.value; c <= e.max.value; c++) out.push(c);
      else return null;
    }
    return out;
  }

  /** How an atom's characters relate to those of a one-character pattern. */
  relation(atom: Atom, raw: string): 'subset' | 'disjoint' | 'mixed' {
    if (atom === 'any') return 'mixed';
    const target = this.matcher(raw);
    const members = this.members(atom);
    let inside = 0;
    let outside = 0;
    if (members !== null) {
      for (const cp of members) {
        if (target.test(String.fromCodePoint(cp))) inside++;
        else outside++;
      }
    } else {
      const mine = this.bitmap(atom.raw);
      const theirs = this.bitmap(raw);
      for (let cp = 0; cp < mine.length; cp++) {
        if (mine[cp] === 0) continue;
        if (theirs[cp] === 1) inside++;
        else outside++;
        if (inside > 0 && outside > 0) break;
      }
    }
    return outside === 0 ? 'subset' : inside === 0 ? 'disjoint' : 'mixed';
  }
}

/**
 * Whether a one-character lookaround always holds or never holds where it stands, judged by what the
 * pattern itself reads next to it: `(?=\w)` before `\d+` always holds when a match goes on (where it
 * fails, the next element fails on the same character at once), `(?<![\p{L}])` after `t` never does.
 */
function settled(look: AST.LookaroundAssertion, raw: string, sets: CharacterSets): 'holds' | 'fails' | null {
  const edge = beside(look, look.kind === 'lookahead' ? 1 : -1);
  const relations = edge.atoms.map((a) => sets.relation(a, raw));
  const allIn = relations.every((r) => r === 'subset');
  const allOut = relations.every((r) => r === 'disjoint');
  // At the input's start or end there is no character: a positive lookaround fails, a negative holds.
  const inside = allIn && !edge.boundary;
  const outside = allOut;
  if (look.negate) return outside ? 'holds' : inside ? 'fails' : null;
  return inside ? 'holds' : outside ? 'fails' : null;
}

function sameLookaround(x: Node, y: Node): boolean {
  if (!isLookaround(x) || !isLookaround(y)) return false;
  const body = (l: AST.LookaroundAssertion): string => l.alternatives.map((a) => a.raw).join('|');
  return x.kind === y.kind && x.negate !== y.negate && body(x) === body(y);
}

/** A group whose alternatives are lookarounds only, no two of which can hold at the same place. */
function exclusiveZeroWidth(g: AST.Group | AST.CapturingGroup): boolean {
  const alts = g.alternatives;
  if (alts.length < 2 || !alts.every((a) => a.elements.length > 0 && a.elements.every(isLookaround)))
    return false;
  for (let i = 0; i < alts.length; i++) {
    for (let j = i + 1; j < alts.length; j++) {
      if (!alts[i]!.elements.some((x) => alts[j]!.elements.some((y) => sameLookaround(x, y)))) return false;
    }
  }
  return true;
}

/** The elements every match begins with (`leads`) or ends with (`trails`), through unquantified groups. */
function edges(pattern: AST.Pattern): { leads: Set<Node>; trails: Set<Node> } {
  const leads = new Set<Node>();
  const trails = new Set<Node>();
  const walk = (alts: readonly AST.Alternative[], end: 'first' | 'last', into: Set<Node>): void => {
    for (const a of alts) {
      const el = end === 'first' ? a.elements[0] : a.elements[a.elements.length - 1];
      if (el === undefined) continue;
      into.add(el);
      if (el.type === 'Group' || el.type === 'CapturingGroup') walk(el.alternatives, end, into);
    }
  };
  walk(pattern.alternatives, 'first', leads);
  walk(pattern.alternatives, 'last', trails);
  return { leads, trails };
}

const LINE_TERMINATOR = '[\\n\\r\\u2028\\u2029]';

export function lower(source: string, flags: string): LowerResult {
  let pattern: AST.Pattern;
  try {
    pattern = parse(source, flags);
  } catch (error) {
    return { error: `not a valid regex: ${(error as Error).message}` };
  }
  if (some(pattern, (n) => n.type === 'Backreference')) return { error: 'a backreference' };
  const reading = first(pattern, (n) => isLookaround(n) && unbounded(n));
  if (reading !== null) return { error: `a lookaround whose body reads without bound: ${reading.raw}` };

  const unicode = flags.includes('u') || flags.includes('v');
  const multiline = flags.includes('m');
  const sets = new CharacterSets(flags);
  const { leads, trails } = edges(pattern);
  let erased = false;

  const lookaround = (n: AST.LookaroundAssertion): string => {
    const body = oneCharacterBody(n);
    // At the pattern's edge: consumed, the search shifted by what it reads.
    const edge = n.kind === 'lookbehind' ? leads.has(n) : trails.has(n);
    if (edge) {
      const c = body === null ? null : characterPattern(body, n.negate, unicode);
      if (c !== null) return !n.negate ? c : n.kind === 'lookbehind' ? `(?:^|${c})` : `(?:${c}|$)`;
      const seq = n.negate ? null : fixedSequence(n);
      if (seq !== null) return seq;
    }
    if (body !== null) {
      const s = settled(n, body.raw, sets);
      if (s === 'holds') return '';
      // Never holds: the path ends there, as on a character no input has.
      if (s === 'fails') return '[]';
    }
    erased = true;
    return '';
  };

  const print = (n: Node): string => {
    switch (n.type) {
      case 'Pattern':
        return n.alternatives.map(print).join('|');
      case 'Alternative':
        return n.elements.map(print).join('');
      case 'Group':
      case 'CapturingGroup': {
        let alts = n.alternatives.map(print);
        // Lookarounds that cannot hold together, left as empty paths: one path.
        if (exclusiveZeroWidth(n) && alts.filter((a) => a === '').length > 1) {
          alts = [...alts.filter((a) => a !== ''), ''];
        }
        const body = alts.join('|');
        return n.type === 'Group' ? `(?:${body})` : `(${n.name === null ? '' : `?<${n.name}>`}${body})`;
      }
      case 'Quantifier': {
        const inner = print(n.element);
        return `${inner === '' ? '(?:)' : inner}${n.raw.slice(n.element.raw.length)}`;
      }
      case 'Assertion':
        if (isLookaround(n)) return lookaround(n);
        if (multiline && (n.kind === 'start' || n.kind === 'end')) {
          // A line's start (end) is "no character before (after), or a line terminator": at the
          // pattern's edge, consumed like a one-character lookbehind (lookahead).
          if (n.kind === 'start' && leads.has(n)) return `(?:^|${LINE_TERMINATOR})`;
          if (n.kind === 'end' && trails.has(n)) return `(?:${LINE_TERMINATOR}|$)`;
          erased = true;
          return '';
        }
        return n.raw;
      default:
        return n.raw;
    }
  };
  const out = print(pattern);
  return { source: out, flags: analysedFlags(flags), erased };
}

/**
 * The pieces a full search splits into: an alternation (not under a repeating quantifier) with two
 * or more alternatives that loop is replaced by each of them alone, and by its loop-free ones
 * together. The full search of the whole is the union of its pieces' full searches, so it is linear
 * exactly when every piece's is; the checker decides small pieces much faster than one large
 * alternation of loops.
 */
export function split(source: string, flags: string): string[] {
  const pattern = parse(source, flags);
  const loops = (n: Node): boolean => some(n, (m) => m.type === 'Quantifier' && m.max === Infinity);
  type Owner = AST.Pattern | AST.Group | AST.CapturingGroup;
  const find = (n: Node, repeated: boolean): Owner | null => {
    if (n.type === 'Pattern' || n.type === 'Group' || n.type === 'CapturingGroup') {
      if (!repeated && n.alternatives.filter(loops).length >= 2) return n;
    }
    if (n.type === 'Quantifier') return find(n.element, repeated || n.max > 1);
    if (isLookaround(n)) return null;
    for (const c of children(n)) {
      const found = find(c, repeated);
      if (found !== null) return found;
    }
    return null;
  };
  const t = find(pattern, false);
  if (t === null) return [source];
  const groups: AST.Alternative[][] = t.alternatives.filter(loops).map((a) => [a]);
  const plain = t.alternatives.filter((a) => !loops(a));
  if (plain.length > 0) groups.push(plain);
  return groups.flatMap((alts) => {
    const body = alts.map((a) => a.raw).join('|');
    const piece =
      t.type === 'Pattern'
        ? body
        : source.slice(0, t.start) +
          (t.type === 'Group' ? `(?:${body})` : `(${t.name === null ? '' : `?<${t.name}>`}${body})`) +
          source.slice(t.end);
    return split(piece, flags);
  });
}
