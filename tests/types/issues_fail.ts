// Must compile with each marked line refused: issues are read-only, and their paths hold keys.
import { type Issue, StreamError, StreamResetError } from 'muxws';

export function wrong(error: StreamResetError, issue: Issue): void {
  // @ts-expect-error issues is a readonly array
  error.issues.push(issue);
  // @ts-expect-error an issue is read-only
  issue.message = 'changed';
  // @ts-expect-error a path is read-only
  issue.path.push('x');
  // @ts-expect-error a path key is a string or a number
  const key: boolean = issue.path[0];
  void key;
  // @ts-expect-error an issue needs a message
  new StreamError('invalid', 'Bad', { issues: [{ path: ['a'] }] });
  // @ts-expect-error issues is an array
  new StreamError('invalid', 'Bad', { issues: { message: 'm' } });
  // @ts-expect-error a path segment is a key or { key }
  new StreamError('invalid', 'Bad', { issues: [{ message: 'm', path: [true] }] });
  // @ts-expect-error the issues of an error cannot be replaced
  error.issues = [];
  // @ts-expect-error a StreamResetError's issues are of the Issue shape
  new StreamResetError('m', { code: 'invalid', remote: true, issues: [{ message: 'm' }] });
  // @ts-expect-error a message is a string
  new StreamError('invalid', 'Bad', { issues: [{ message: 5 }] });
}
