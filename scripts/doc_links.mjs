// The design notes cite the contract's rule ids (`WSM-RCN-002`); a reader can follow one only when
// it links to the section of docs/spec.md that states it. This script finds, in every Markdown
// file below docs/ but docs/spec.md itself:
//
//   - a rule id that is not the text of a link to docs/spec.md (and, with --fix, links it to the
//     section of docs/spec.md where the rule is stated);
//   - a link to docs/spec.md whose anchor is no heading of docs/spec.md;
//   - a link, or a path in the text, that leads outside the repository.
//
//   node scripts/doc_links.mjs          exit 1, naming each problem (tests/docs_test.ts runs it)
//   node scripts/doc_links.mjs --fix    link every rule id, then report what is left
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository: the nearest folder above this module (or the test bundle inlining it) whose
 * deno.json names `@muxws/core`. */
function repositoryRoot() {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const config = join(dir, 'deno.json');
    if (existsSync(config) && JSON.parse(readFileSync(config, 'utf8')).name === '@muxws/core') {
      return dir;
    }
    if (dirname(dir) === dir) throw new Error(`Cannot find the repository above ${dir}`);
    dir = dirname(dir);
  }
}

const root = repositoryRoot();

/** A rule id of the contract. */
const RULE_ID = /WSM-[A-Z]+-\d+/g;

/** A Markdown link `[text](target)`, its text holding no bracket pair of its own. */
const LINK = /\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]*)\)/g;

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of `text`'s headings, duplicates numbered as GitHub numbers them. */
export function anchors(text) {
  const seen = new Map();
  const out = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.push(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/**
 * Where each rule id is stated in the contract: the anchor of the section holding the line that
 * starts with it (a list item `- WSM-…`), or else its first mention.
 */
export function ruleSections(specText) {
  const names = anchors(specText);
  const stated = new Map();
  const mentioned = new Map();
  let section = '';
  let heading = 0;
  let fenced = false;
  for (const line of specText.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (!fenced && /^#{1,6}\s/.test(line)) {
      section = names[heading++];
      continue;
    }
    for (const id of line.match(RULE_ID) ?? []) if (!mentioned.has(id)) mentioned.set(id, section);
    const lead = /^\s*(?:[-*]|\d+\.)?\s*(WSM-[A-Z]+-\d+)\b/.exec(line);
    if (lead && !stated.has(lead[1])) stated.set(lead[1], section);
  }
  return new Map([...mentioned, ...stated]);
}

/** The text of `text` outside fenced code blocks and outside the given links, for searching. */
function withoutLinks(text, keep) {
  return text.replace(LINK, (whole, _label, target) => keep(target) ? ' ' : whole);
}

/** The spec's path as `file` links to it. */
function specFrom(file) {
  return relative(dirname(join(root, file)), join(root, 'docs', 'spec.md')).split(sep).join('/');
}

/** Whether a link target of `file` is docs/spec.md (with or without an anchor). */
function isSpec(file, target) {
  const path = target.split('#')[0];
  return path !== '' && resolve(dirname(join(root, file)), path) === join(root, 'docs', 'spec.md');
}

/** Each problem of one doc: unlinked rule ids, dead spec anchors, links out of the repository. */
export function problems(file, text, specText) {
  const found = [];
  const names = new Set(anchors(specText));
  const sections = ruleSections(specText);
  for (const match of text.matchAll(LINK)) {
    const target = match[2];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
    const path = target.split('#')[0];
    const to = resolve(dirname(join(root, file)), path);
    if (to !== root && !to.startsWith(root + sep)) {
      found.push(`${file}: the link to ${target} leads outside the repository`);
    }
    if (isSpec(file, target)) {
      const anchor = target.split('#')[1];
      if (anchor !== undefined && !names.has(anchor)) {
        found.push(`${file}: the link to ${target} names no heading of docs/spec.md`);
      }
    }
  }
  for (const m of text.matchAll(/(?:\.\.\/)*\bshared\/seeds\/[^\s)`]*|\bseeds\/\d{3}_[^\s)`]*/g)) {
    found.push(`${file}: "${m[0]}" names a file outside the repository`);
  }
  const rest = withoutLinks(text, (target) => isSpec(file, target));
  for (const id of rest.match(RULE_ID) ?? []) {
    found.push(
      sections.has(id)
        ? `${file}: ${id} is not a link to docs/spec.md`
        : `${file}: ${id} is no rule of docs/spec.md`,
    );
  }
  return found;
}

/** `text` with every rule id that is not yet a link made a link to its section of the spec. */
export function linkRuleIds(file, text, specText) {
  const sections = ruleSections(specText);
  const spec = specFrom(file);
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(LINK)) {
    parts.push({ text: text.slice(last, match.index), plain: true });
    parts.push({ text: match[0], plain: false });
    last = match.index + match[0].length;
  }
  parts.push({ text: text.slice(last), plain: true });
  return parts.map((part) => {
    if (!part.plain) return part.text;
    return part.text.replace(RULE_ID, (id, offset, whole) => {
      const section = sections.get(id);
      if (section === undefined) return id;
      // Left alone inside a code span (counted on its line), to be linked by hand.
      const line = whole.slice(whole.lastIndexOf('\n', offset) + 1, offset);
      if ((line.split('`').length - 1) % 2 === 1) return id;
      return `[${id}](${spec}#${section})`;
    });
  }).join('');
}

/** The Markdown files below docs/ that cite the contract: every one but docs/spec.md. */
export function designDocs() {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(join(root, dir)).sort()) {
      const path = `${dir}/${name}`;
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md') && path !== 'docs/spec.md') out.push(path);
    }
  };
  walk('docs');
  return out;
}

function main() {
  const specText = readFileSync(join(root, 'docs', 'spec.md'), 'utf8');
  const fix = process.argv.includes('--fix');
  const found = [];
  for (const file of designDocs()) {
    let text = readFileSync(join(root, file), 'utf8');
    if (fix) {
      const linked = linkRuleIds(file, text, specText);
      if (linked !== text) {
        writeFileSync(join(root, file), linked);
        console.log(`linked the rule ids of ${file}`);
        text = linked;
      }
    }
    found.push(...problems(file, text, specText));
  }
  for (const line of found) console.error(line);
  if (found.length > 0) {
    console.error(`${found.length} problems (node scripts/doc_links.mjs --fix links rule ids)`);
    process.exit(1);
  }
}

if (fileURLToPath(import.meta.url) === process.argv[1]) main();
