// The layout rules of the style guide that a machine can check: imports in lib/ run one way (no
// circle, type-only imports included); each folder of lib/ imports only the folders its row of
// ALLOWED_IMPORTS names; a `_name.ts` file is private to its folder (examples/ use the entry
// points as an application does; tests and the in-process benchmarks may reach a part to measure
// it); docs/design/layout.md names every folder and file; and tests/ mirrors lib/'s folders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { repoRoot } from './_repo.ts';

const root = repoRoot();

/** Every `.ts` file below `dir`, as paths relative to the repository root. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out.sort();
}

/** The relative modules a file imports or re-exports, type-only ones included. */
export function relativeImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (
    const m of text.matchAll(/(?:^|[\s;])(?:import|export)\b[^'"]*?\bfrom\s*['"](\.[^'"]+)['"]/g)
  ) {
    found.push(normalize(join(dirname(file), m[1])));
  }
  for (const m of text.matchAll(/(?:^|[\s;])import\s*['"](\.[^'"]+)['"]/g)) {
    found.push(normalize(join(dirname(file), m[1])));
  }
  return found;
}

function graph(): Map<string, string[]> {
  const files = ['mod.ts', ...sources('lib')];
  const edges = new Map<string, string[]>();
  for (const file of files) {
    edges.set(file, relativeImports(file, readFileSync(join(root, file), 'utf8')));
  }
  return edges;
}

/** The first circle of imports found in `edges`, as the files along it, or undefined. */
export function findCycle(edges: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of edges.keys()) {
    const cycle = visit(file);
    if (cycle) return cycle;
  }
  return undefined;
}

test('findCycle() finds a circle of imports and none in a tree', () => {
  const tree = new Map([['a.ts', ['b.ts', 'c.ts']], ['b.ts', ['c.ts']], ['c.ts', []]]);
  assert.equal(findCycle(tree), undefined);
  const circle = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']]]);
  assert.deepEqual(findCycle(circle), ['a.ts', 'b.ts', 'c.ts', 'a.ts']);
});

test('relativeImports() reads value, type-only, multi-line and side-effect imports and re-exports', () => {
  const text = [
    "import { a } from './a.ts';",
    "import type { B } from '../b.ts';",
    'import {',
    '  c,',
    "} from './c.ts';",
    "export * from './d.ts';",
    "export type { E } from './e.ts';",
    "import './f.ts';",
    "import assert from 'node:assert';",
  ].join('\n');
  assert.deepEqual(relativeImports('lib/x.ts', text), [
    'lib/a.ts',
    'b.ts',
    'lib/c.ts',
    'lib/d.ts',
    'lib/e.ts',
    'lib/f.ts',
  ]);
});

test('STYLE layout: imports in lib/ form no circle, type-only imports included', () => {
  const cycle = findCycle(graph());
  assert.equal(cycle, undefined, `import circle: ${cycle?.join(' -> ')}`);
});

/** A folder of lib/, or `.` for `lib/errors.ts`, the one file at its root. */
type Folder =
  | '.'
  | 'util'
  | 'wire'
  | 'sockets'
  | 'session'
  | 'routes'
  | 'broadcast'
  | 'dialer'
  | 'acceptor'
  | 'adapters'
  | 'stores';

/**
 * What each folder of lib/ may import besides itself. Imports run down this table: every folder
 * may import `errors.ts`; nothing imports an adapter, and only an adapter imports a store (the
 * `./cloudflare` entry re-exports the Durable Object history). The style guide's rules hold of
 * the table itself (checked below): `wire/` and `session/` never import a side or `sockets/`
 * (the session stays sans-IO), and `dialer/` and `acceptor/` never import each other. Apart from
 * the table, a `_name.ts` file is private to its folder: no other folder imports it.
 */
export const ALLOWED_IMPORTS: Readonly<Record<Folder, readonly Folder[]>> = {
  '.': ['util'],
  util: ['.'],
  wire: ['.', 'util'],
  sockets: ['.', 'util', 'wire'],
  session: ['.', 'util', 'wire'],
  routes: ['.', 'util', 'wire', 'session'],
  broadcast: ['.', 'util', 'wire'],
  dialer: ['.', 'util', 'wire', 'sockets', 'session', 'routes'],
  acceptor: ['.', 'util', 'wire', 'sockets', 'session', 'routes', 'broadcast'],
  adapters: ['.', 'util', 'wire', 'sockets', 'broadcast', 'acceptor', 'stores'],
  stores: ['.', 'util', 'wire', 'broadcast'],
};

/**
 * The imports that break the table today, each a leak a seam still to be built removes. The list
 * only shrinks: the check fails on a violation not listed here, and on an entry whose import no
 * longer breaks the table (delete it when its seam lands).
 */
export const KNOWN_LEAKS: readonly { from: string; to: string; why: string }[] = [];

/** The folder of a file of lib/ (`.` for a file at lib/'s root). */
function folderOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? parts[1] : '.';
}

/**
 * Every import of `edges` that breaks `allowed` or imports another folder's `_file`, as
 * `from -> to: reason`. Files outside lib/ (`mod.ts`) may import any face.
 */
export function layoutViolations(
  edges: Map<string, string[]>,
  allowed: Readonly<Record<string, readonly string[]>>,
): Map<string, string> {
  const found = new Map<string, string>();
  for (const [from, targets] of edges) {
    for (const to of targets) {
      if (!to.startsWith('lib/')) continue;
      const reasons: string[] = [];
      const [a, b] = [folderOf(from), folderOf(to)];
      const inLib = from.startsWith('lib/');
      if (inLib && a !== b && !(allowed[a] ?? []).includes(b)) {
        reasons.push(`${a}/ may not import ${b}/`);
      }
      const base = to.split('/').pop()!;
      if (base.startsWith('_') && (!inLib || a !== b)) {
        reasons.push(`${base} is private to ${dirname(to)}/`);
      }
      if (reasons.length > 0) found.set(`${from} -> ${to}`, reasons.join('; '));
    }
  }
  return found;
}

test("layoutViolations() names a forbidden folder, another folder's _file, and nothing else", () => {
  const edges = new Map([
    ['lib/session/session.ts', ['lib/session/_receive.ts', 'lib/wire/codes.ts']],
    ['lib/session/_receive.ts', ['lib/dialer/dialer.ts']],
    ['lib/dialer/_link.ts', ['lib/session/_receive.ts', 'lib/session/session.ts']],
    ['mod.ts', ['lib/dialer/dialer.ts', 'lib/dialer/_link.ts']],
  ]);
  const allowed = { session: ['wire'], dialer: ['session'], wire: [] };
  assert.deepEqual(Object.fromEntries(layoutViolations(edges, allowed)), {
    'lib/session/_receive.ts -> lib/dialer/dialer.ts': 'session/ may not import dialer/',
    'lib/dialer/_link.ts -> lib/session/_receive.ts': '_receive.ts is private to lib/session/',
    'mod.ts -> lib/dialer/_link.ts': '_link.ts is private to lib/dialer/',
  });
});

test('STYLE layout: the allowed-imports table keeps the session sans-IO and the sides apart', () => {
  const folders = new Set(
    sources('lib').map(folderOf),
  );
  assert.deepEqual([...folders].sort(), Object.keys(ALLOWED_IMPORTS).sort(), 'a row per folder');
  for (const core of ['wire', 'session'] as const) {
    for (const outside of ['dialer', 'acceptor', 'sockets'] as const) {
      assert.ok(!ALLOWED_IMPORTS[core].includes(outside), `${core}/ may not import ${outside}/`);
    }
  }
  assert.ok(!ALLOWED_IMPORTS.dialer.includes('acceptor'), 'dialer/ may not import acceptor/');
  assert.ok(!ALLOWED_IMPORTS.acceptor.includes('dialer'), 'acceptor/ may not import dialer/');
});

test("STYLE layout: lib/ imports what the allowed-imports table allows, and no other folder's _file", () => {
  const edges = graph();
  for (const file of sources('examples')) {
    edges.set(file, relativeImports(file, readFileSync(join(root, file), 'utf8')));
  }
  const found = layoutViolations(edges, ALLOWED_IMPORTS);
  const known = new Set(KNOWN_LEAKS.map(({ from, to }) => `${from} -> ${to}`));
  const fresh = [...found].filter(([edge]) => !known.has(edge)).map(([e, why]) => `${e}: ${why}`);
  assert.deepEqual(fresh, [], 'imports that break the layout');
  const gone = [...known].filter((edge) => !found.has(edge));
  assert.deepEqual(gone, [], 'leaks listed in KNOWN_LEAKS that no longer occur: delete them');
});

test('STYLE layout: docs/design/layout.md names every folder and every file of lib/', () => {
  const map = readFileSync(join(root, 'docs', 'design', 'layout.md'), 'utf8');
  const missing: string[] = [];
  for (const folder of Object.keys(ALLOWED_IMPORTS)) {
    if (folder !== '.' && !map.includes(`| \`${folder}/\``)) missing.push(`${folder}/ (a row)`);
  }
  for (const file of sources('lib')) {
    if (!map.includes(`\`${file.slice('lib/'.length)}\``)) missing.push(file);
  }
  assert.deepEqual(missing, [], 'docs/design/layout.md leaves these out');
});

test("STYLE layout: the folders of tests/ mirror lib/'s, beside the runtime and harness folders", () => {
  const own = ['deno', 'bun', 'node', 'hostile', 'types'];
  const folders = readdirSync(join(root, 'tests'))
    .filter((name) => statSync(join(root, 'tests', name)).isDirectory() && !own.includes(name));
  const lib = Object.keys(ALLOWED_IMPORTS);
  assert.deepEqual(folders.filter((name) => !lib.includes(name)), [], 'not a folder of lib/');
});

/** The top-level classes of a source text with their length in lines. */
export function classSizes(text: string): { name: string; lines: number }[] {
  const sizes: { name: string; lines: number }[] = [];
  const lines = text.split('\n');
  let open: { name: string; start: number } | undefined;
  lines.forEach((line, i) => {
    const m = /^(?:export )?(?:abstract )?class (\w+)/.exec(line);
    if (m) open = { name: m[1], start: i };
    else if (open && line.startsWith('}')) {
      sizes.push({ name: open.name, lines: i - open.start + 1 });
      open = undefined;
    }
  });
  return sizes;
}

test('classSizes() measures each top-level class from its line to its closing brace', () => {
  const text = [
    'export class A {',
    '  x = 1;',
    '}',
    'function f() {',
    '}',
    'class B {}',
    'class C {',
    '}',
  ]
    .join('\n');
  assert.deepEqual(classSizes(text), [{ name: 'A', lines: 3 }, { name: 'C', lines: 2 }]);
});

test('STYLE layout: no file in lib/ is over 800 lines and no class over 480', () => {
  for (const file of sources('lib')) {
    const text = readFileSync(join(root, file), 'utf8');
    const lines = text.split('\n').length;
    assert.ok(lines <= 800, `${file} has ${lines} lines`);
    for (const { name, lines } of classSizes(text)) {
      assert.ok(lines <= 480, `class ${name} in ${file} has ${lines} lines`);
    }
  }
});

/**
 * The classes of `text` that extend another class, as `Name extends Base`, but those the session
 * and acceptor folders allow: an error (a base named `…Error`) and `TagSet extends Set`.
 */
export function subclassViolations(text: string): string[] {
  const found: string[] = [];
  for (
    const m of text.matchAll(/^(?:export )?(?:abstract )?class (\w+)(?:<[^>{]*>)? extends (\w+)/gm)
  ) {
    const [, name, base] = m;
    if (base.endsWith('Error') || (name === 'TagSet' && base === 'Set')) continue;
    found.push(`${name} extends ${base}`);
  }
  return found;
}

test('subclassViolations() names a class that extends another, and not an error or the tag set', () => {
  const text = [
    'export class PeerSession extends Session {',
    '}',
    'class Part<T> extends Base<T> {}',
    'export class FrameError extends ProtocolError {}',
    'export class TagSet extends Set<string> {',
    '}',
    'class Session implements StreamHost {',
    '}',
    '  // class Quoted extends Other, not at the start of a line',
  ].join('\n');
  assert.deepEqual(subclassViolations(text), ['PeerSession extends Session', 'Part extends Base']);
});

test('STYLE layout: no class in lib/session/ or lib/acceptor/ extends another, errors and TagSet excepted', () => {
  const found: string[] = [];
  for (const file of [...sources('lib/session'), ...sources('lib/acceptor')]) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const violation of subclassViolations(text)) found.push(`${file}: ${violation}`);
  }
  assert.deepEqual(found, [], 'a part is an object the class owns or a function it calls');
});
