// Must compile (`deno check`): the issues of a reset and of a refused hello are readonly
// `{ path, message }` arrays, and a StreamError takes a Standard Schema's issues as they are.
import {
  HelloRejectedError,
  type Issue,
  type StandardSchemaV1Issue,
  StreamError,
  type StreamErrorOptions,
  StreamResetError,
} from 'muxws';

export function fieldErrors(error: unknown): Record<string, string> {
  const fields: Record<string, string> = {};
  const issues: readonly Issue[] =
    error instanceof StreamResetError || error instanceof HelloRejectedError ? error.issues : [];
  for (const { path, message } of issues) {
    const key: string | number | undefined = path[0];
    fields[path.join('.')] = `${key ?? ''}: ${message}`;
  }
  return fields;
}

export function refuse(issues: readonly StandardSchemaV1Issue[]): never {
  const options: StreamErrorOptions = { issues };
  throw new StreamError('invalid', 'Invalid hello', options);
}

export const mine: StreamError = new StreamError('invalid', 'Bad', {
  issues: [{ path: ['todo', 0, Symbol('s'), { key: 'title' }], message: 'Expected string' }],
});
