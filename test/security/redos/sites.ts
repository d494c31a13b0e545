import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Every place the services' sources make a regular expression, found with the TypeScript compiler's
 * parser (not a text search): regex literals, `new RegExp(...)` and `RegExp(...)` (also through
 * `globalThis.RegExp`), and the string methods that turn a string argument into a regex
 * (`.match('…')`, `.matchAll('…')`, `.search('…')`).
 *
 * A constructor's pattern and flags are worked out where the code states them: string and template
 * literals, `String.raw`, `+`, a regex literal's source, and constants of the same file built from
 * those. What depends on anything else (a parameter, a table turned into an alternation at load
 * time) is left `dynamic`: the test checks the RegExp objects the code really builds there.
 */

export interface StaticRegex {
  readonly kind: 'static';
  /** Repository-relative path. */
  readonly file: string;
  readonly line: number;
  readonly source: string;
  readonly flags: string;
  /** `literal`, `constructor` or `implicit` (a string method's string argument). */
  readonly form: 'literal' | 'constructor' | 'implicit';
}

export interface DynamicRegex {
  readonly kind: 'dynamic';
  readonly file: string;
  readonly line: number;
  /** The function the constructor is called in (its name at run time), null at module level. */
  readonly enclosing: string | null;
  /** The call as written (shortened). */
  readonly code: string;
}

export type RegexSite = StaticRegex | DynamicRegex;

const SOURCE_FILE = /\.(?:ts|cts|mts|js|cjs|mjs)$/;

/** The source files of every service: `services/<name>/src/**`. */
export function serviceSourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (SOURCE_FILE.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path);
    }
  };
  const services = join(root, 'services');
  for (const entry of readdirSync(services, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const src = join(services, entry.name, 'src');
    try {
      walk(src);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return files.sort();
}

/** Why a value could not be worked out statically. */
class NotStatic extends Error {}

/** Evaluates string-valued expressions built from literals and same-file constants. */
class Evaluator {
  private readonly constants = new Map<string, ts.Expression>();
  private readonly evaluating = new Set<string>();

  constructor(sourceFile: ts.SourceFile) {
    for (const statement of sourceFile.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      if ((statement.declarationList.flags & ts.NodeFlags.Const) === 0) continue;
      for (const d of statement.declarationList.declarations) {
        if (ts.isIdentifier(d.name) && d.initializer !== undefined)
          this.constants.set(d.name.text, d.initializer);
      }
    }
  }

  string(node: ts.Expression): string {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node))
      return this.string(node.expression);
    if (ts.isTemplateExpression(node)) {
      let out = node.head.text;
      for (const span of node.templateSpans) out += this.string(span.expression) + span.literal.text;
      return out;
    }
    if (
      ts.isTaggedTemplateExpression(node) &&
      ts.isPropertyAccessExpression(node.tag) &&
      ts.isIdentifier(node.tag.expression) &&
      node.tag.expression.text === 'String' &&
      node.tag.name.text === 'raw'
    ) {
      const t = node.template;
      if (ts.isNoSubstitutionTemplateLiteral(t)) return rawText(t);
      let out = rawText(t.head);
      for (const span of t.templateSpans) out += this.string(span.expression) + rawText(span.literal);
      return out;
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken)
      return this.string(node.left) + this.string(node.right);
    if (ts.isIdentifier(node)) {
      const init = this.constants.get(node.text);
      if (init === undefined || this.evaluating.has(node.text)) throw new NotStatic(node.text);
      this.evaluating.add(node.text);
      try {
        return this.string(init);
      } finally {
        this.evaluating.delete(node.text);
      }
    }
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'source') {
      const target = ts.isIdentifier(node.expression)
        ? this.constants.get(node.expression.text)
        : node.expression;
      if (target !== undefined && ts.isRegularExpressionLiteral(target))
        return splitLiteral(target.text).source;
    }
    throw new NotStatic(node.getText());
  }
}

function rawText(node: ts.TemplateLiteralLikeNode): string {
  if (node.rawText === undefined) throw new NotStatic(node.getText());
  return node.rawText;
}

function splitLiteral(text: string): { source: string; flags: string } {
  const end = text.lastIndexOf('/');
  return { source: text.slice(1, end), flags: text.slice(end + 1) };
}

/** The name the function around `node` has at run time (what a stack frame reports), or null. */
function enclosingFunction(node: ts.Node): string | null {
  for (let n = node.parent; !ts.isSourceFile(n); n = n.parent) {
    if (
      ts.isFunctionDeclaration(n) ||
      ts.isMethodDeclaration(n) ||
      ts.isGetAccessor(n) ||
      ts.isSetAccessor(n)
    )
      return n.name === undefined ? null : n.name.getText();
    if (ts.isConstructorDeclaration(n)) return 'constructor';
    if (ts.isArrowFunction(n) || ts.isFunctionExpression(n)) {
      if (ts.isFunctionExpression(n) && n.name !== undefined) return n.name.text;
      const p = n.parent;
      if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p))
        return p.name.getText();
      // An anonymous callback: its frame has no name.
      return null;
    }
  }
  return null;
}

/** Whether `callee` names the global RegExp constructor. */
function isRegExpCallee(callee: ts.Expression): boolean {
  if (ts.isIdentifier(callee)) return callee.text === 'RegExp';
  return (
    ts.isPropertyAccessExpression(callee) &&
    callee.name.text === 'RegExp' &&
    ts.isIdentifier(callee.expression) &&
    callee.expression.text === 'globalThis'
  );
}

const IMPLICIT = new Set(['match', 'matchAll', 'search']);

/** The regex sites of one file. */
export function regexSitesOf(path: string, text: string, root: string): RegexSite[] {
  const kind =
    path.endsWith('.ts') || path.endsWith('.cts') || path.endsWith('.mts')
      ? ts.ScriptKind.TS
      : ts.ScriptKind.JS;
  const sourceFile = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const evaluator = new Evaluator(sourceFile);
  const file = relative(root, path);
  const lineOf = (n: ts.Node): number => sourceFile.getLineAndCharacterOfPosition(n.getStart()).line + 1;
  const sites: RegexSite[] = [];
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      sites.push({
        kind: 'static',
        file,
        line: lineOf(node),
        form: 'literal',
        ...splitLiteral(node.getText()),
      });
    } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && isRegExpCallee(node.expression)) {
      const args = node.arguments ?? [];
      try {
        const [pattern, flags] = args;
        if (pattern === undefined) throw new NotStatic('no pattern');
        const literal = ts.isRegularExpressionLiteral(pattern) ? splitLiteral(pattern.text) : null;
        const source = literal === null ? evaluator.string(pattern) : literal.source;
        const flagText = flags === undefined ? (literal?.flags ?? '') : evaluator.string(flags);
        sites.push({
          kind: 'static',
          file,
          line: lineOf(node),
          form: 'constructor',
          source,
          flags: flagText,
        });
      } catch (error) {
        if (!(error instanceof NotStatic)) throw error;
        const code = node.getText().replace(/\s+/g, ' ');
        sites.push({
          kind: 'dynamic',
          file,
          line: lineOf(node),
          enclosing: enclosingFunction(node),
          code: code.length > 100 ? `${code.slice(0, 97)}...` : code,
        });
      }
    } else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      IMPLICIT.has(node.expression.name.text) &&
      node.arguments.length === 1
    ) {
      const arg = node.arguments[0]!;
      if (
        ts.isStringLiteral(arg) ||
        ts.isNoSubstitutionTemplateLiteral(arg) ||
        ts.isTemplateExpression(arg)
      ) {
        try {
          const source = evaluator.string(arg);
          const flags = node.expression.name.text === 'matchAll' ? 'g' : '';
          sites.push({ kind: 'static', file, line: lineOf(node), form: 'implicit', source, flags });
        } catch (error) {
          if (!(error instanceof NotStatic)) throw error;
          sites.push({
            kind: 'dynamic',
            file,
            line: lineOf(node),
            enclosing: enclosingFunction(node),
            code: node.getText().slice(0, 100),
          });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return sites;
}

/** Every regex site of every service. */
export function scanServices(root: string): RegexSite[] {
  return serviceSourceFiles(root).flatMap((path) => regexSitesOf(path, readFileSync(path, 'utf8'), root));
}
