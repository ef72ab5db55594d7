/**
 * The value-describer of `_describe.ts`, for the files of `adapters/` (an internal file is
 * imported only from its own folder). No entry point exports it: it is not public API.
 *
 * @module
 */
export { describe } from './_describe.ts';
