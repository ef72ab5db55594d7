// Writes the option tables of docs/guide/options.md from the JSDoc of the public entries.
//
//   node scripts/guide_options.mjs           rewrite every table in place
//   node scripts/guide_options.mjs --check   exit 1, naming the stale tables, when the page
//                                            differs from what the JSDoc gives
//   node scripts/guide_options.mjs --check --page <file>   check another copy of the page
//
// Each table sits between `<!-- options:<key> -->` and `<!-- /options -->`; TABLES below maps a
// key to an interface of an entry. For each property of the interface (inherited ones after its
// own, in declaration order) a row gives the name, the type as written, the `@default` tag and
// the first sentence of its doc. `deno doc --json <entry>` (the npm-installed Deno) reads the
// JSDoc. Rule ids and cross-references to the specification are left out of the sentences: the
// guide is for users of the library. Every key must have its markers on the page and every
// marker a key, so a table can neither go missing nor name something that does not exist.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const defaultPage = join(root, 'docs', 'guide', 'options.md');

/** The tables: marker key, entry file, interface name. */
export const TABLES = [
  { key: 'connect', entry: 'mod.ts', name: 'ConnectOptions' },
  { key: 'reconnect', entry: 'mod.ts', name: 'ReconnectOptions' },
  { key: 'heartbeat', entry: 'mod.ts', name: 'HeartbeatOptions' },
  { key: 'close-codes', entry: 'mod.ts', name: 'CloseCodes' },
  { key: 'hello', entry: 'mod.ts', name: 'HelloOptions' },
  { key: 'limits', entry: 'mod.ts', name: 'Limits' },
  { key: 'request', entry: 'mod.ts', name: 'RequestOptions' },
  { key: 'open', entry: 'mod.ts', name: 'OpenOptions' },
  { key: 'subscribe', entry: 'mod.ts', name: 'SubscribeOptions' },
  { key: 'dedupe', entry: 'mod.ts', name: 'DedupeOptions' },
  { key: 'presence-follow', entry: 'mod.ts', name: 'PresenceFollowOptions' },
  { key: 'dialer-recovery', entry: 'mod.ts', name: 'DialerRecoveryOptions' },
  { key: 'wait-while-reconnecting', entry: 'mod.ts', name: 'WaitWhileReconnectingOptions' },
  { key: 'acceptor', entry: 'lib/acceptor/acceptor.ts', name: 'AcceptorOptions' },
  { key: 'recovery', entry: 'lib/acceptor/acceptor.ts', name: 'RecoveryOptions' },
  { key: 'presence', entry: 'lib/acceptor/acceptor.ts', name: 'PresenceOptions' },
  { key: 'authorized', entry: 'lib/acceptor/acceptor.ts', name: 'Authorized' },
  { key: 'broadcast', entry: 'lib/acceptor/acceptor.ts', name: 'BroadcastOptions' },
  { key: 'broadcast-all', entry: 'lib/acceptor/acceptor.ts', name: 'BroadcastAllOptions' },
  { key: 'emit', entry: 'lib/acceptor/acceptor.ts', name: 'EmitOptions' },
  { key: 'acceptor-close', entry: 'lib/acceptor/acceptor.ts', name: 'AcceptorCloseOptions' },
  { key: 'hono', entry: 'lib/adapters/hono.ts', name: 'MuxwsHonoOptions' },
  { key: 'node', entry: 'lib/adapters/node.ts', name: 'AttachOptions' },
  {
    key: 'durable-object',
    entry: 'lib/adapters/cloudflare.ts',
    name: 'DurableObjectAcceptorOptions',
  },
  {
    key: 'durable-object-upgrade',
    entry: 'lib/adapters/cloudflare.ts',
    name: 'DurableObjectUpgradeOptions',
  },
  { key: 'redis', entry: 'lib/stores/redis.ts', name: 'RedisBackplaneOptions' },
  {
    key: 'broadcast-channel',
    entry: 'lib/broadcast/backplane.ts',
    name: 'BroadcastChannelBackplaneOptions',
  },
  { key: 'json-codec', entry: 'mod.ts', name: 'JsonCodecOptions' },
];

const docCache = new Map();

/** The `deno doc --json` symbols of an entry (its re-exports included). */
function symbolsOf(entry) {
  if (docCache.has(entry)) return docCache.get(entry);
  const deno = join(root, 'node_modules', '.bin', 'deno');
  const run = spawnSync(deno, ['doc', '--json', entry], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: '1' },
  });
  if (run.status !== 0) {
    throw new Error(
      `Expected "deno doc --json ${entry}" to succeed: exit ${run.status}\n${run.stderr}`,
    );
  }
  const json = JSON.parse(run.stdout);
  const symbols = Object.values(json.nodes).flatMap((node) => node.symbols ?? []);
  docCache.set(entry, symbols);
  return symbols;
}

/** The interface declaration named `name` (a string or a pattern) in `symbols`. */
function findInterface(symbols, name, entry) {
  const matches = symbols.filter((s) =>
    (typeof name === 'string' ? s.name === name : name.test(s.name)) &&
    s.declarations?.some((d) => d.kind === 'interface')
  );
  if (matches.length !== 1) {
    throw new Error(
      `Expected one interface ${name} in ${entry}: found ${
        matches.map((s) => s.name).join(', ') || 'none'
      }`,
    );
  }
  return {
    name: matches[0].name,
    decl: matches[0].declarations.find((d) => d.kind === 'interface'),
  };
}

/** The type as written, from deno doc's type tree. */
export function typeText(t) {
  if (t === undefined || t === null) return 'unknown';
  const v = t.value;
  switch (t.kind) {
    case 'keyword':
      return v;
    case 'literal':
      if (v.kind === 'string') return `'${v.string ?? t.repr}'`;
      if (v.kind === 'template') return 'string';
      return String(v.number ?? v.boolean ?? v.bigInt ?? t.repr);
    case 'typeRef': {
      const params = v.typeParams?.length ? `<${v.typeParams.map(typeText).join(', ')}>` : '';
      return v.typeName + params;
    }
    case 'union':
      return v.map(typeText).join(' | ');
    case 'intersection':
      return v.map(typeText).join(' & ');
    case 'array': {
      const inner = typeText(v);
      return /[ |&]/.test(inner) ? `(${inner})[]` : `${inner}[]`;
    }
    case 'tuple':
      return `[${v.map(typeText).join(', ')}]`;
    case 'parenthesized':
      return `(${typeText(v)})`;
    case 'typeOperator':
      return `${v.operator} ${typeText(v.tsType)}`;
    case 'indexedAccess':
      return `${typeText(v.objType)}[${typeText(v.indexType)}]`;
    case 'typeQuery':
      return `typeof ${v.kind === 'entityName' ? v.value : v.value ?? t.repr}`;
    case 'fnOrConstructor': {
      const params = v.params.map((p) => {
        const name = p.kind === 'rest' ? `...${p.arg?.name ?? 'args'}` : p.name ?? 'arg';
        return `${name}${p.optional ? '?' : ''}: ${typeText(p.tsType)}`;
      });
      return `${v.constructor ? 'new ' : ''}(${params.join(', ')}) => ${typeText(v.tsType)}`;
    }
    case 'typeLiteral': {
      const members = (v.properties ?? []).map((p) =>
        `${p.readonly ? 'readonly ' : ''}${p.name}${p.optional ? '?' : ''}: ${typeText(p.tsType)}`
      );
      return `{ ${members.join('; ')} }`;
    }
    default:
      return t.repr || t.kind;
  }
}

/** Inline markup of a JSDoc text made plain for a table cell. */
function plain(text) {
  return text
    .replace(
      /\{@link(?:code|plain)?\s+([^}\s|]+)(?:\s*\|\s*([^}]+))?\}/g,
      (_, ref, label) => label ? label.trim() : `\`${ref}\``,
    )
    // Rule ids and specification sections are for implementers.
    .replace(/\s*\((?:WSM-[A-Z]+-\d+[^)]*|SPEC §[^)]*)\)/g, '')
    .replace(/\s*\bWSM-[A-Z]+-\d+(?:\.\.\d+)?\b/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The first sentence of a doc text: up to the first full stop that ends a sentence. */
export function firstSentence(doc) {
  const text = plain(doc.split(/\n\s*\n/)[0] ?? '');
  // A full stop ends a sentence when a space or the end follows, not in "e.g." or "i.e.", and
  // not inside backticks.
  let inCode = false;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '`') inCode = !inCode;
    if (inCode || text[i] !== '.') continue;
    const next = text[i + 1];
    if (next !== undefined && next !== ' ') continue;
    const before = text.slice(Math.max(0, i - 3), i + 1);
    if (/\b(e\.g|i\.e|etc)\.$/.test(before)) continue;
    return text.slice(0, i + 1);
  }
  return text === '' ? '' : text.replace(/[.:;,]?$/, '.');
}

/**
 * A `@default {…}` value whose closing braces deno doc dropped (`{{ a: 1 }}` reads as
 * `{ a: 1 `): closed again.
 */
function balanced(value) {
  const open = (value.match(/\{/g) ?? []).length - (value.match(/\}/g) ?? []).length;
  return open > 0 ? `${value.trimEnd()} ${'}'.repeat(open)}` : value;
}

/** A table cell: pipes escaped, never empty. */
function cell(text) {
  return text === '' ? '—' : text.replace(/\|/g, '\\|');
}

/** The properties of an interface, its own and then those of the interfaces it extends. */
function propertiesOf(symbols, decl, entry, seen = new Set()) {
  const own = decl.def.properties ?? [];
  const inherited = [];
  for (const ext of decl.def.extends ?? []) {
    const name = ext.value?.typeName ?? ext.typeName ?? ext.repr;
    if (!name || seen.has(name)) continue;
    seen.add(name);
    const parent = symbols.find((s) =>
      s.name === name && s.declarations?.some((d) => d.kind === 'interface')
    );
    if (!parent) continue; // Omit<…> and other type-level parents: their members are listed own
    const parentDecl = parent.declarations.find((d) => d.kind === 'interface');
    inherited.push(...propertiesOf(symbols, parentDecl, entry, seen));
  }
  const names = new Set(own.map((p) => p.name));
  return [...own, ...inherited.filter((p) => !names.has(p.name))];
}

/** The rows of one table: name, type, default, what it does. */
export function rowsFor(table) {
  if (!existsSync(join(root, table.entry))) {
    throw new Error(`Expected entry ${table.entry} of table "${table.key}" to exist`);
  }
  const symbols = symbolsOf(table.entry);
  const { decl } = findInterface(symbols, table.name, table.entry);
  return propertiesOf(symbols, decl, table.entry).map((p) => {
    const tags = p.jsDoc?.tags ?? [];
    const def = tags.find((tag) => tag.kind === 'default');
    let doc = p.jsDoc?.doc ?? '';
    // An inline `@default {x}` in the doc text (deno doc leaves it there): the default.
    let inlineDefault;
    doc = doc.replace(/@default\s+\{(\{.*?\}|[^}]*)\}/, (_, value) => {
      inlineDefault = value;
      return '';
    });
    const defaultText = def
      ? `\`${balanced(def.value)}\`${def.doc ? ` (${plain(def.doc)})` : ''}`
      : inlineDefault !== undefined
      ? `\`${inlineDefault}\``
      : '';
    const type = typeText(p.tsType);
    return [
      `\`${p.name}${p.optional ? '?' : ''}\``,
      `\`${type}\``,
      defaultText,
      firstSentence(doc),
    ];
  });
}

/** One table as Markdown, padded so that `deno fmt` leaves it as it is. */
export function renderTable(rows) {
  const header = ['name', 'type', 'default', 'what it does'];
  const body = rows.map((row) =>
    row.map((c, i) => (i === 0 && !c.startsWith('`') ? `\`${c}\`` : cell(c)))
  );
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(3, ...all.map((row) => [...row[i]].length)));
  const line = (row) =>
    `| ${row.map((c, i) => c + ' '.repeat(widths[i] - [...c].length)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...body.map(line)]
    .join('\n');
}

const MARKER = /<!-- options:([a-z-]+) -->\n[\s\S]*?<!-- \/options -->/g;

/** The page with every table regenerated. Throws for a missing or unknown marker. */
export function regenerate(page) {
  const keys = TABLES.map((t) => t.key);
  const found = [...page.matchAll(MARKER)].map((m) => m[1]);
  const unknown = found.filter((k) => !keys.includes(k));
  const missing = keys.filter((k) => !found.includes(k));
  if (unknown.length > 0 || missing.length > 0) {
    throw new Error(
      `Expected one marker per table: unknown ${unknown.join(', ') || 'none'}, missing ${
        missing.join(', ') || 'none'
      }`,
    );
  }
  return page.replace(MARKER, (_, key) => {
    const table = TABLES.find((t) => t.key === key);
    return `<!-- options:${key} -->\n\n${renderTable(rowsFor(table))}\n\n<!-- /options -->`;
  });
}

/** The keys whose tables differ between two versions of the page. */
function staleKeys(current, fresh) {
  const tables = (page) => new Map([...page.matchAll(MARKER)].map((m) => [m[1], m[0]]));
  const a = tables(current);
  const b = tables(fresh);
  return [...b.keys()].filter((k) => a.get(k) !== b.get(k));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const pageArg = args.indexOf('--page');
  const file = pageArg === -1 ? defaultPage : resolve(args[pageArg + 1]);
  const current = readFileSync(file, 'utf8');
  let fresh;
  try {
    fresh = regenerate(current);
  } catch (error) {
    console.error(`${file}: ${error.message}`);
    process.exit(2);
  }
  if (check) {
    const stale = staleKeys(current, fresh);
    if (stale.length > 0 || fresh !== current) {
      console.error(
        `${file} is stale (tables: ${
          stale.join(', ') || 'none'
        }): run node scripts/guide_options.mjs`,
      );
      process.exit(1);
    }
    console.log(`${file}: every option table matches the JSDoc`);
  } else if (fresh !== current) {
    writeFileSync(file, fresh);
    console.log(`${file}: tables rewritten`);
  } else {
    console.log(`${file}: already up to date`);
  }
}
