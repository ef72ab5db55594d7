// Proves the npm tarball (WSM-APP-009): stages the package as it is published (`node
// scripts/build.mjs --stage`, which builds dist/) and `npm pack`s the staged folder into a temporary
// folder, checks the tarball holds the build and none of the repository's tests, benchmarks or
// scripts, and that its package.json holds only what a consumer needs (no scripts, dev
// dependencies or workspaces), installs it with `ws` and `@msgpack/msgpack` into an empty project
// (npm printing no warning), and from there
//
//   - on Node: an acceptor behind a `ws` server and a dialer, one request round trip;
//   - on Bun (the repository's node_modules/.bin/bun): the same through the package's Bun adapter;
//   - on Deno (node_modules/.bin/deno, reading the project's node_modules): the same through the
//     package's Deno adapter;
//   - tsc (the repository's TypeScript) with the tsconfig.json docs/guide/getting-started.md gives
//     (its "TypeScript settings" block): a file importing the package's types and disposing of a
//     connection with `await using`;
//   - tsc with Bun's recommended tsconfig and @types/bun (the repository's dev dependency, or the
//     @types folder named by MUXWS_TYPES_ROOT): every ```ts bun block of docs/guide/, as a Bun
//     user pastes it;
//
// and ends with `deno publish --dry-run`, the JSR side, which must pass with no warning.
//
// Every server listens on 127.0.0.1 on an ephemeral port; every step is capped at 120 s; the
// temporary folder is removed at the end, pass or fail. Exit status 0 when every step passed.
//
//   node scripts/pack_check.mjs [--keep]   (--keep leaves the temporary folder, and says where)
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './build.mjs';
import { PUBLISHED_FIELDS } from './entries.mjs';

const STEP_TIMEOUT_MS = 120_000;
const bin = (name) => join(root, 'node_modules', '.bin', name);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const installedAt = (typesRoot, name) =>
  JSON.parse(readFileSync(join(typesRoot, name, 'package.json'), 'utf8')).version;
const installed = (name) =>
  JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

/** Runs one step, capped in time; returns its stdout and stderr, throws with them unless exit 0. */
function step(label, command, args, cwd) {
  console.log(`=== pack: ${label}`);
  const started = Date.now();
  const r = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: STEP_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    maxBuffer: 64 << 20,
    env: { ...process.env, NO_COLOR: '1', npm_config_update_notifier: 'false' },
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    const why = r.error?.code === 'ETIMEDOUT'
      ? `took over ${STEP_TIMEOUT_MS / 1000} s`
      : `exited with ${r.status ?? r.signal ?? r.error}`;
    throw new Error(`${label}: ${command} ${args.join(' ')} ${why}\n${r.stdout}\n${r.stderr}`);
  }
  console.log(`=== pack: ${label}: ok after ${seconds} s`);
  return { stdout: r.stdout, stderr: r.stderr };
}

/** The tarball's file list, without the `package/` prefix npm gives every entry. */
function tarballFiles(tarball) {
  return step('list the tarball', 'tar', ['-tzf', tarball], root).stdout
    .split('\n')
    .filter((line) => line && !line.endsWith('/'))
    .map((line) => line.replace(/^package\//, ''));
}

/** Throws naming every problem of the file list: what must be there, and what must not. */
function checkFiles(files) {
  const problems = [];
  for (
    const dir of ['tests/', 'bench/', '.ci/', 'scripts/', 'examples/', 'docs/', 'node_modules/']
  ) {
    const stray = files.filter((f) => f.startsWith(dir));
    if (stray.length > 0) problems.push(`${stray.length} files under ${dir}, e.g. ${stray[0]}`);
  }
  const outside = files.filter((f) =>
    !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE'].includes(f)
  );
  if (outside.length > 0) problems.push(`files outside dist/: ${outside.join(', ')}`);
  const wanted = ['package.json', 'README.md', 'LICENSE', 'dist/mod.js', 'dist/mod.d.ts'];
  for (const conditions of Object.values(pkg.exports)) {
    for (const target of Object.values(conditions)) wanted.push(target.replace(/^\.\//, ''));
  }
  for (const file of new Set(wanted)) {
    if (!files.includes(file)) problems.push(`no ${file}`);
  }
  if (problems.length > 0) {
    throw new Error(
      `Expected the tarball to hold dist/, README.md and LICENSE only:\n  ` +
        problems.join('\n  '),
    );
  }
}

/** Throws naming every field of the tarball's package.json a consumer does not need. */
function checkManifest(tarball) {
  const text = step("read the tarball's package.json", 'tar', [
    '-xzOf',
    tarball,
    'package/package.json',
  ], root).stdout;
  const manifest = JSON.parse(text);
  const extra = Object.keys(manifest).filter((field) => !PUBLISHED_FIELDS.includes(field));
  const problems = [];
  if (extra.length > 0) problems.push(`fields a consumer does not need: ${extra.join(', ')}`);
  for (const field of ['name', 'version', 'type', 'exports']) {
    if (manifest[field] === undefined) problems.push(`no "${field}"`);
  }
  if (JSON.stringify(manifest.exports) !== JSON.stringify(pkg.exports)) {
    problems.push('"exports" differs from the repository\'s package.json');
  }
  if (problems.length > 0) {
    throw new Error(
      `Expected the tarball's package.json to hold what a consumer needs only:\n  ` +
        problems.join('\n  '),
    );
  }
  return manifest;
}

// The programs run from the installed project. Each exits 0 after one round trip, 1 on an error
// or after 20 s.
const WATCHDOG = `const watchdog = setTimeout(() => {
  console.error('no round trip within 20 s');
  process.exit(1);
}, 20_000);
`;
const ROUND_TRIP = `const conn = await connect(\`ws://127.0.0.1:\${port}/\`, OPTIONS);
const reply = await conn.request({ say: 'hi' });
if (reply?.echo?.say !== 'hi') throw new Error(\`Expected the echo of { say: 'hi' }: got \${JSON.stringify(reply)}\`);
if (msgpackCodec.name !== 'msgpack') throw new Error(\`Expected the msgpack codec: got \${msgpackCodec.name}\`);
await conn.close();
await acceptor.close();
`;

const NODE_APP = `import { createServer } from 'node:http';
import { WebSocket, WebSocketServer } from 'ws';
import { connect } from '@muxws/core';
import { Acceptor } from '@muxws/core/acceptor';
import { msgpackCodec } from '@muxws/core/msgpack';
${WATCHDOG}
const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
const server = createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({
  noServer: true,
  handleProtocols: (offered) => acceptor.protocol([...offered]) ?? false,
});
server.on('upgrade', (req, socket, head) =>
  wss.handleUpgrade(req, socket, head, (ws) => acceptor.accept(ws)));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;
try {
${ROUND_TRIP.replace('OPTIONS', '{ WebSocket }')}} finally {
  server.closeAllConnections();
  server.close();
  clearTimeout(watchdog);
}
console.log('node: round trip ok');
`;

const BUN_APP = `import { connect } from '@muxws/core';
import { Acceptor } from '@muxws/core/acceptor';
import { bunHandlers } from '@muxws/core/bun';
import { msgpackCodec } from '@muxws/core/msgpack';
${WATCHDOG}
const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, ...bunHandlers(acceptor) });
const port = server.port;
try {
${ROUND_TRIP.replace('OPTIONS', '{}')}} finally {
  server.stop(true);
  clearTimeout(watchdog);
}
console.log('bun: round trip ok');
`;

const DENO_APP = `import { connect } from '@muxws/core';
import { Acceptor } from '@muxws/core/acceptor';
import { upgrade } from '@muxws/core/deno';
import { msgpackCodec } from '@muxws/core/msgpack';
${WATCHDOG}
const acceptor = new Acceptor({ onStream: (stream) => ({ echo: stream.payload }) });
const server = Deno.serve({ hostname: '127.0.0.1', port: 0, onListen() {} }, (req) => upgrade(req, acceptor));
const port = server.addr.port;
try {
${ROUND_TRIP.replace('OPTIONS', '{}')}} finally {
  await server.shutdown();
  clearTimeout(watchdog);
}
console.log('deno: round trip ok');
`;

const TYPES = `import { connect, type Connection, Reconnect } from '@muxws/core';
import { Acceptor } from '@muxws/core/acceptor';
import { msgpackCodec } from '@muxws/core/msgpack';
import type { Codec } from '@muxws/core';

export async function roundTrip(url: string): Promise<unknown> {
  const conn: Connection = await connect(url, { reconnect: new Reconnect({ maxAttempts: 3 }) });
  try {
    return await conn.request({ say: 'hi' });
  } finally {
    await conn.close();
  }
}

export const acceptor: Acceptor = new Acceptor({ onStream: (stream) => stream.payload });
export const codec: Codec = msgpackCodec;

export async function disposed(url: string): Promise<unknown> {
  await using conn = await connect(url);
  return await conn.request('ping');
}
// The declarations are real, not \`any\`: a wrong option type is an error.
// @ts-expect-error: Reconnect's factor is a number
new Reconnect({ factor: 'fast' });
`;

/** Every ```ts bun block of the guide's pages, as `{ name, code }` (name from page and line). */
function guideBunBlocks() {
  const dir = join(root, 'docs', 'guide');
  const blocks = [];
  for (const page of readdirSync(dir).filter((f) => f.endsWith('.md')).sort()) {
    const text = readFileSync(join(dir, page), 'utf8');
    for (const match of text.matchAll(/^```ts bun\n([\s\S]*?)^```$/gm)) {
      const line = text.slice(0, match.index).split('\n').length;
      blocks.push({ name: `bun_${page.replace(/\W+/g, '_')}_${line}.ts`, code: match[1] });
    }
  }
  return blocks;
}

/**
 * Bun's recommended compiler options (what `bun init` writes), with @types/bun from `typeRoots`.
 */
function bunTsconfig(typeRoots, files) {
  return {
    compilerOptions: {
      lib: ['ESNext'],
      target: 'ESNext',
      module: 'Preserve',
      moduleDetection: 'force',
      moduleResolution: 'bundler',
      allowImportingTsExtensions: true,
      verbatimModuleSyntax: true,
      noEmit: true,
      strict: true,
      skipLibCheck: true,
      noFallthroughCasesInSwitch: true,
      noUncheckedIndexedAccess: true,
      noImplicitOverride: true,
      types: ['bun'],
      typeRoots: [typeRoots],
    },
    files,
  };
}

/** The tsconfig.json the guide gives a TypeScript project: its "TypeScript settings" block. */
function guideTsconfig() {
  const page = readFileSync(join(root, 'docs', 'guide', 'getting-started.md'), 'utf8');
  const section = page.split('## TypeScript settings')[1] ?? '';
  const block = /^```json\n([\s\S]*?)^```$/m.exec(section);
  if (!block) {
    throw new Error(
      'Expected a ```json block under "## TypeScript settings" in docs/guide/getting-started.md',
    );
  }
  return JSON.parse(block[1]);
}

function main() {
  const keep = process.argv.includes('--keep');
  const tmp = mkdtempSync(join(tmpdir(), 'muxws-pack-'));
  try {
    const packDir = join(tmp, 'pack');
    const app = join(tmp, 'app');
    mkdirSync(packDir);
    mkdirSync(app);
    const staged = join(tmp, 'staged');
    step('stage the package (builds dist/)', process.execPath, [
      join(root, 'scripts', 'build.mjs'),
      '--stage',
      staged,
    ], root);
    step('npm pack the staged package', 'npm', [
      'pack',
      staged,
      '--pack-destination',
      packDir,
      '--no-fund',
    ], root);
    const tarballs = readdirSync(packDir).filter((f) => f.endsWith('.tgz'));
    if (tarballs.length !== 1) {
      throw new Error(`Expected one tarball from npm pack: found ${tarballs.join(', ') || 'none'}`);
    }
    const tarball = join(packDir, tarballs[0]);
    const files = tarballFiles(tarball);
    checkFiles(files);
    const published = checkManifest(tarball);
    console.log(`=== pack: its package.json holds ${Object.keys(published).join(', ')}`);
    console.log(`=== pack: ${tarballs[0]} holds ${files.length} files, all under dist/ but 3`);

    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'muxws-pack-check', private: true, type: 'module' }, null, 2),
    );
    const install = step('npm install the tarball into an empty project', 'npm', [
      'install',
      tarball,
      `ws@${installed('ws')}`,
      `@msgpack/msgpack@${installed('@msgpack/msgpack')}`,
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
    ], app);
    const warned = `${install.stdout}\n${install.stderr}`.split('\n').filter((line) =>
      /^npm warn/i.test(line)
    );
    if (warned.length > 0) throw new Error(`npm install warned:\n${warned.join('\n')}`);
    const manifest = JSON.parse(
      readFileSync(join(app, 'node_modules', '@muxws', 'core', 'package.json'), 'utf8'),
    );
    if (manifest.name !== '@muxws/core' || manifest.version !== pkg.version) {
      throw new Error(
        `Expected @muxws/core ${pkg.version} installed: got ${manifest.name} ${manifest.version}`,
      );
    }

    writeFileSync(join(app, 'node_app.mjs'), NODE_APP);
    writeFileSync(join(app, 'bun_app.mjs'), BUN_APP);
    writeFileSync(join(app, 'deno_app.mjs'), DENO_APP);
    writeFileSync(join(app, 'index.ts'), TYPES);
    step(
      'Node: a dialer and an acceptor from the package',
      process.execPath,
      ['node_app.mjs'],
      app,
    );
    step('Bun: a dialer and an acceptor from the package', bin('bun'), ['run', 'bun_app.mjs'], app);
    step('Deno: a dialer and an acceptor from the package', bin('deno'), [
      'run',
      '--no-lock',
      '--allow-net=127.0.0.1',
      '--allow-read',
      '--allow-env',
      'deno_app.mjs',
    ], app);
    const tsconfig = guideTsconfig();
    tsconfig.compilerOptions.noEmit = true;
    tsconfig.files = ['index.ts'];
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
    step("tsc with the guide's tsconfig.json: the package types", process.execPath, [
      join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      app,
    ], app);
    const typesRoot = process.env.MUXWS_TYPES_ROOT ?? join(root, 'node_modules', '@types');
    if (!existsSync(join(typesRoot, 'bun', 'package.json'))) {
      throw new Error(
        `Expected @types/bun in ${typesRoot}: it is a dev dependency of the repository ` +
          '(npm install --save-dev @types/bun), or name another @types folder in MUXWS_TYPES_ROOT',
      );
    }
    const bunBlocks = guideBunBlocks();
    if (bunBlocks.length < 2) {
      throw new Error(`Expected the guide's two Bun blocks: found ${bunBlocks.length}`);
    }
    for (const block of bunBlocks) writeFileSync(join(app, block.name), block.code);
    writeFileSync(
      join(app, 'tsconfig.bun.json'),
      JSON.stringify(bunTsconfig(typesRoot, bunBlocks.map((b) => b.name)), null, 2),
    );
    step(
      `tsc with @types/bun ${
        installedAt(typesRoot, 'bun')
      }: the guide's ${bunBlocks.length} Bun blocks`,
      process.execPath,
      [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.bun.json'],
      app,
    );
    const dryRun = step('deno publish --dry-run: the JSR package', bin('deno'), [
      'publish',
      '--dry-run',
      '--allow-dirty',
    ], root);
    const said = `${dryRun.stdout}\n${dryRun.stderr}`;
    if (/warning/i.test(said)) throw new Error(`deno publish --dry-run warned:\n${said}`);
    console.log('=== pack: the tarball installs and runs on Node, Bun and Deno, and type-checks');
  } finally {
    if (keep) console.log(`=== pack: left ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

try {
  main();
} catch (error) {
  console.error(`=== pack: FAILED: ${error.message}`);
  process.exit(1);
}
