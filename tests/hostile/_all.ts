/**
 * Registers every hostile-input test for one acceptor runtime, subject by subject; the
 * per-runtime files (`tests/deno/hostile_deno_test.ts`, `tests/bun/hostile_bun_test.ts`,
 * `tests/node/hostile_node_test.ts`) call {@linkcode hostileTests}. The shared harness is
 * `_harness.ts`.
 * @module
 */
import type { HostileRuntime } from './_harness.ts';
import { upgradeTests } from './upgrade.ts';
import { malformedTests } from './malformed.ts';
import { hostileAcceptorTests } from './hostile_acceptor.ts';
import { floodsTests } from './floods.ts';
import { flowAbuseTests } from './flow_abuse.ts';
import { slowPeersTests } from './slow_peers.ts';
import { throwingCodeTests } from './throwing_code.ts';
import { invalidArgumentsTests } from './invalid_arguments.ts';
import { networkFaultsTests } from './network_faults.ts';
import { restartsTests } from './restarts.ts';
import { leaksTests } from './leaks.ts';
import { backplaneTests } from './backplane.ts';
import { oversizeTests } from './oversize.ts';
import { resetFloodsTests } from './reset_floods.ts';
import { recoveryFloodsTests } from './recovery_floods.ts';
import { decodedItemsTests } from './decoded_items.ts';

export type { HostileRuntime };

/** Registers the tests of every subject for `runtime`. */
export function hostileTests(runtime: HostileRuntime): void {
  upgradeTests(runtime);
  malformedTests(runtime);
  hostileAcceptorTests(runtime);
  floodsTests(runtime);
  flowAbuseTests(runtime);
  slowPeersTests(runtime);
  throwingCodeTests(runtime);
  invalidArgumentsTests(runtime);
  networkFaultsTests(runtime);
  restartsTests(runtime);
  leaksTests(runtime);
  backplaneTests(runtime);
  oversizeTests(runtime);
  resetFloodsTests(runtime);
  recoveryFloodsTests(runtime);
  decodedItemsTests(runtime);
}
