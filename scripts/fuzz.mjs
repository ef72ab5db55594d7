// `npm run fuzz`: the long frame fuzz. Runs tests/wire/fuzz_frames_test.ts on Deno with
// MUXWS_FUZZ_SCALE=20 (about 2,000,000 generated frames across both codecs: round trips of valid
// frames and damaged frames fed to live sessions), seeded and reproducible.
//
//   npm run fuzz                      # the default seed, scale 20
//   npm run fuzz -- --seed 1234       # another seed (a failure prints the seed to replay)
//   npm run fuzz -- --scale 100       # longer
//
// Exit status is the test run's. Bounded: the run is killed after 20 minutes.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1];
};
const scale = option('--scale', '20');
const seed = option('--seed', undefined);
const env = { ...process.env, MUXWS_FUZZ_SCALE: scale, NO_COLOR: '1' };
if (seed !== undefined) env.MUXWS_FUZZ_SEED = seed;
console.log(`fuzz: scale ${scale}${seed === undefined ? '' : `, seed ${seed}`}`);
const started = Date.now();
const run = spawnSync(
  join(root, 'node_modules', '.bin', 'deno'),
  ['test', '-A', 'tests/wire/fuzz_frames_test.ts'],
  { cwd: root, env, stdio: 'inherit', timeout: 20 * 60_000 },
);
console.log(
  `fuzz: exit ${run.status ?? run.signal} after ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
process.exit(run.status ?? 1);
