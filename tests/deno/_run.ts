/**
 * Runs a child process for the Deno-only tests, bounded at 30 s.
 * @module
 */

/** What a child process printed, and its exit code. */
export interface RunOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` with `args` in `cwd`, no stdin, `NO_COLOR=1` and `env`; killed after 30 s.
 * Resolves with its exit code and what it printed.
 */
export async function run(
  command: string,
  args: string[],
  cwd: string | URL,
  env: Record<string, string> = {},
): Promise<RunOutput> {
  const output = await new Deno.Command(command, {
    args,
    cwd,
    env: { NO_COLOR: '1', ...env },
    stdin: 'null',
    stdout: 'piped',
    stderr: 'piped',
    signal: AbortSignal.timeout(30_000),
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}
