/** Types of the parts of scripts/build.mjs that TypeScript code imports (see that file). */

/** The Node/V8 flags `npm start` serves with, read from its script in package.json; throws when that script changed form. */
export declare function serviceNodeFlags(): string[];
/** The environment `npm start` sets for the service besides NODE_ENV (e.g. MALLOC_ARENA_MAX), read from its script in package.json. */
export declare function serviceEnv(): Record<string, string>;
