// The layout rules of the style guide that a machine can check: imports in lib/ run one way (no
// circle, type-only imports included), and an internal file of lib/ (`_name.ts`) is imported only
// by the library's own code: lib/ and its adapters below it, never by examples/, which use the
// entry points as an application does. (Tests and the in-process benchmarks may reach an
// internal part to measure it.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
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

test('STYLE layout: an internal file (_name.ts) of lib/ is imported only from lib/ or the folders below it', () => {
  const users = ['mod.ts', ...sources('lib'), ...sources('examples')];
  for (const file of users) {
    const imports = relativeImports(file, readFileSync(join(root, file), 'utf8'));
    for (const target of imports) {
      const base = target.split('/').pop()!;
      if (!base.startsWith('_') || !target.startsWith('lib/')) continue;
      const owner = 'lib';
      assert.ok(
        file.startsWith(owner + '/'),
        `${file} imports ${relative(dirname(file), target)}, an internal file of ${owner}/`,
      );
    }
  }
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
